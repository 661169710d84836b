;;; org-agent-base.el --- What every org-agent file needs first -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every other org-agent file requires this one first.  It holds the
;; customization group and its subgroups, one per feature (so they
;; exist before any `defcustom' of the package is evaluated), the error symbols callers can
;; `condition-case' on, and the list of the functions of the Rust
;; module, `org-agent-module', which each file declares to the byte
;; compiler with `org-agent--declare-module-functions'.

;;; Code:

(require 'cl-lib)

(defgroup org-agent nil
  "An AI agent that lives inside Emacs and works in your Org notes."
  :group 'org
  :prefix "org-agent-")

;; Each option is in one of these, under `org-agent'.

(defgroup org-agent-store nil
  "Where your notes and org-agent's store are."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-backends nil
  "The LLMs that answer: backends, cascade, tiers, the local model."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-chat nil
  "The chat: its buffer, what each turn sends, how it streams."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-security nil
  "What the LLM may see and the agent may do.
Private and untrusted notes, secrets, protected files, the
permissions, the shell tool's sandbox and the audit file."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-actions nil
  "How the agent's edits and evaluations are carried out."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-skills nil
  "Where the skills are and which are loaded."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-runs nil
  "Skills run in the background, with no user waiting."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-scans nil
  "The scans and the daily briefing."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-semantic nil
  "Search by meaning: the embedding backend and what it embeds."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-mcp nil
  "The Model Context Protocol: the servers the agent uses, the server it offers."
  :group 'org-agent
  :prefix "org-agent-")

(defgroup org-agent-module nil
  "The Rust module: where it is installed, how it is built, its log."
  :group 'org-agent
  :prefix "org-agent-")

;;;; Errors

;; The module defines the first three in the same way when it loads; they are here so that
;; code can name them (and `condition-case' on them) before it is loaded.
(define-error 'org-agent-error "org-agent error")
(define-error 'org-agent-config-error "org-agent configuration error" 'org-agent-error)
(define-error 'org-agent-store-error "org-agent store error" 'org-agent-error)
(define-error 'org-agent-store-locked "org-agent store in use by another Emacs"
  'org-agent-store-error)
;; The module cannot be built or loaded (org-agent-build.el).
(define-error 'org-agent-module-error "org-agent module error" 'org-agent-error)
;; An action of the agent failed (org-agent-actuator.el).
(define-error 'org-agent-action-error "org-agent action error" 'org-agent-error)

;;;; The module's functions

(defconst org-agent--module-functions
  '((org-agent--action-names)
    (org-agent--verb-specs)
    (org-agent--set-redisplay-interval seconds)
    (org-agent--load-skills dirs disabled)
    (org-agent--set-shipped-triggers names)
    (org-agent--import-skill file)
    (org-agent--version)
    (org-agent--configure todo done org-version no-inherit snapshots inlinetask)
    (org-agent--set-privacy tags files)
    (org-agent--set-untrusted-tags tags)
    (org-agent--set-secret-properties names)
    (org-agent--redact-private text file)
    (org-agent--private-p id)
    (org-agent--set-roots dirs home state protected)
    (org-agent--edit-refusal action)
    (org-agent--store-open dir)
    (org-agent--store-close)
    (org-agent--store-wait-retired)
    (org-agent--store-flush)
    (org-agent--ingest-file file force)
    (org-agent--ingest-text file text todo done)
    (org-agent--ingest-text-async file text todo done)
    (org-agent--ingest-saved-async file signature crlf todo done)
    (org-agent--ingest-directories-async dirs)
    (org-agent--reconcile-async dirs)
    (org-agent--cancel request)
    (org-agent--remove-file file)
    (org-agent--set-channel process)
    (org-agent--drain)
    (org-agent--query query)
    (org-agent--hit-field hits index key)
    (org-agent--hit-plist hits index fields)
    (org-agent--count query)
    (org-agent--node id)
    (org-agent--node-history id)
    (org-agent--outline-path id)
    (org-agent--headline-candidates)
    (org-agent--headline-target candidate)
    (org-agent--headline-count)
    (org-agent--headline-matches input ignore-case)
    (org-agent--headline-complete input ignore-case)
    (org-agent--headline-prefixed prefix ignore-case)
    (org-agent--stats)
    (org-agent--snapshot label)
    (org-agent--snapshots)
    (org-agent--rollback index)
    (org-agent--read-sexp text)
    (org-agent--print-sexp value)
    (org-agent--stimulus stimulus backend options)
    (org-agent--preview-request conversation text backend options)
    (org-agent--list-models backend)
    (org-agent--embed backend all)
    (org-agent--semantic-search backend text k)
    (org-agent--answer reply answer)
    (org-agent--actuated reply result)
    (org-agent--reply-pending-p reply)
    (org-agent--node-at file pos)
    (org-agent--chat-cancel-all)
    (org-agent--chat-forget conversation)
    (org-agent--log-since seq)
    (org-agent--log-capacity)
    (org-agent--telemetry)
    (org-agent--spent-today)
    (org-agent--chat-restore conversation messages)
    (org-agent--chat-history conversation)
    (org-agent--skill-run name text provenance backend options)
    (org-agent--skill-stats)
    (org-agent--approvals all)
    (org-agent--approval-diff id diff)
    (org-agent--approval-settle id state outcome audit-file)
    (org-agent--approvals-file)
    (org-agent--fire-trigger kind file pos)
    (org-agent--permissions-explain rules action scope)
    (org-agent--scan name file inbox)
    (org-agent--scan-names)
    (org-agent--secret-spans text)
    (org-agent--mcp-configure servers)
    (org-agent--mcp-status)
    (org-agent--mcp-restart name)
    (org-agent--mcp-resources name)
    (org-agent--mcp-read-resource name uri)
    (org-agent--mcp-prompts name)
    (org-agent--mcp-get-prompt name prompt args)
    (org-agent--mcp-serve port state-directory permissions audit-file embedding ask)
    (org-agent--mcp-stop-serving)
    (org-agent--mcp-serving))
  "The functions of the module, `org-agent-module', as (NAME ARGUMENT...).
Every `#[defun]' of src/emacs/: Rust's fn NAME is org-agent--NAME
with `_' as `-', and the arguments are those of its Rust signature.
A test checks this list against the loaded module.")

(defmacro org-agent--declare-module-functions ()
  "Declare the module's functions to the byte compiler.
A `declare-function' holds only in the file it is in: each file that
calls the module expands this after requiring org-agent-base."
  `(progn
     ,@(mapcar (lambda (f) `(declare-function ,(car f) "org-agent-module" ,(cdr f)))
               org-agent--module-functions)))

;;;; Org releases

;; Org 9.6 (Emacs 29) renamed its folding functions into org-fold and made the old names
;; obsolete; Emacs 28 ships Org 9.5, which has only the old ones.  These call whichever the
;; loaded Org has, so the package compiles without warnings and runs under both.

(declare-function org-fold-show-context "org-fold" (&optional key))
(declare-function org-fold-show-entry "org-fold" (&optional hide-drawers))
(declare-function org-fold-subtree "org-fold" (flag))
(declare-function org-show-context "org" (&optional key))
(declare-function org-show-entry "org" ())
(declare-function org-flag-subtree "org" (flag))

(defun org-agent--show-context (&optional key)
  "Reveal the text around point as Org does for KEY (see `org-show-context')."
  (if (fboundp 'org-fold-show-context)
      (org-fold-show-context key)
    (with-no-warnings (org-show-context key))))

(defun org-agent--show-entry ()
  "Show the body of the entry at point."
  (if (fboundp 'org-fold-show-entry)
      (org-fold-show-entry)
    (with-no-warnings (org-show-entry))))

(defun org-agent--fold-subtree ()
  "Fold the subtree at point, its heading left visible."
  (if (fboundp 'org-fold-subtree)
      (org-fold-subtree t)
    (with-no-warnings (org-flag-subtree t))))

(provide 'org-agent-base)
;;; org-agent-base.el ends here
