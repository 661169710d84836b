//! A real model server for the end-to-end tests: `scripts/local-llm serve MODEL PORT`
//! (llama.cpp's server from PyPI, installed on first use), stopped with its whole process
//! group when dropped.

use super::free_port;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The running server.
pub struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let group = -(self.child.id() as i32);
        // SAFETY: signals only the process group this test created (its leader is our child).
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: as above.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn healthy(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
}

/// Starts `scripts/local-llm serve MODEL` (`smollm2`, `qwen`, `embed`) and waits until it
/// answers `/health`. A server that cannot be installed or started fails the test: the tests
/// exist to prove the real path works.
pub fn start(model: &str) -> Server {
    let port = free_port();
    let child = Command::new(root().join("scripts/local-llm"))
        .args(["serve", model, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("scripts/local-llm runs");
    let mut server = Server { child, port };
    // The first run installs llama.cpp's server and the model from PyPI: allow minutes.
    let deadline = Instant::now() + Duration::from_secs(900);
    while !healthy(port) {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("scripts/local-llm serve {model} exited: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the {model} server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    server
}
