// Where the installed MCP packages live, and a `require` that loads them.
//
// The packages are not installed next to these scripts but in a cache
// (scripts/mcp-peers install), and ESM ignores NODE_PATH; so the scripts load
// them through createRequire rooted at the cache directory (the SDK ships
// CommonJS builds beside its ESM ones).  The directory is, in order:
//   ORG_AGENT_MCP_PEERS_DIR (set by `scripts/mcp-peers node`),
//   tests/mcp itself when someone ran `npm ci` there,
//   else the output of `scripts/mcp-peers path` (which installs if needed).
// So `node tests/mcp/client.mjs ...` works as well as
// `scripts/mcp-peers node tests/mcp/client.mjs ...`.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sdk = (dir) => existsSync(join(dir, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'));

function peersDir() {
  const fromEnv = process.env.ORG_AGENT_MCP_PEERS_DIR;
  if (fromEnv && sdk(fromEnv)) return fromEnv;
  if (sdk(here)) return here;
  const script = join(here, '..', '..', 'scripts', 'mcp-peers');
  // stdout carries only the directory; install logs go to our stderr.
  const r = spawnSync(script, ['path'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  const dir = (r.stdout || '').trim();
  if (r.status !== 0 || !sdk(dir)) {
    process.stderr.write(`peers.mjs: could not install the MCP peers (${script} path exited ${r.status})\n`);
    process.exit(70);
  }
  return dir;
}

export const PEERS_DIR = peersDir();
export const require = createRequire(join(PEERS_DIR, 'package.json'));
