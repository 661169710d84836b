;;; org-agent.el --- An AI agent that lives inside Emacs and works in your Org notes -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;; Author: The org-agent authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: outlines, tools
;; URL: https://example.invalid/org-agent

;;; Commentary:

;; org-agent turns your Org files into a live environment an LLM can
;; work in, safely.  Its core is a Rust dynamic module that keeps every
;; Org file you have mirrored in an object store of headlines (with
;; Merkle hashes, history, snapshots and persistence) and does its work
;; on worker threads, so Emacs never waits.
;;
;; Enable `org-agent-mode' to ingest `org-agent-directories' and keep
;; the store current as you save.  Commands: `org-agent-find',
;; `org-agent-store-info', `org-agent-ingest-directory'.  The Elisp API
;; (`org-agent-query', `org-agent-node', ...) is in org-agent-store.el.

;;; Code:

(require 'org)
(require 'org-agent-build)
(require 'org-agent-store)
(require 'org-agent-actuator)
(require 'org-agent-tools)
(require 'org-agent-chat)
(require 'org-agent-semantic)

(defgroup org-agent nil
  "An AI agent that lives inside Emacs and works in your Org notes."
  :group 'org
  :prefix "org-agent-")

;;;###autoload
(define-minor-mode org-agent-mode
  "Keep org-agent's object store current with your Org files.
When on, the store is loaded, the Org files under
`org-agent-directories' are ingested in the background (unchanged
files are skipped), and saving an Org buffer re-ingests it: the main
thread only copies the text, a worker parses it."
  :global t
  :group 'org-agent
  :lighter " Agent"
  (if org-agent-mode
      (condition-case err
          (progn
            (add-hook 'after-save-hook #'org-agent--after-save)
            (if (org-agent--start)
                (when (org-agent--directories) (org-agent-ingest-directory))
              (add-hook 'org-agent--after-build-functions #'org-agent--resume-mode)))
        (error
         (setq org-agent-mode nil)
         (remove-hook 'after-save-hook #'org-agent--after-save)
         (signal (car err) (cdr err))))
    (remove-hook 'after-save-hook #'org-agent--after-save)))

(defun org-agent--resume-mode ()
  "Finish turning on `org-agent-mode' once the module was built."
  (remove-hook 'org-agent--after-build-functions #'org-agent--resume-mode)
  (when (and org-agent-mode (org-agent--start) (org-agent--directories))
    (org-agent-ingest-directory)))

;; Headlines are found by any part of their outline path, not only its start.
(add-to-list 'completion-category-defaults
             '(org-agent-headline (styles substring basic)))

;;;###autoload
(defun org-agent-find ()
  "Jump to a headline chosen from the store, by outline path, tags and TODO."
  (interactive)
  (org-agent--require-started)
  (let* ((candidates (org-agent--headline-candidates))
         (table (make-hash-table :test #'equal :size (length candidates))))
    (unless candidates
      (user-error "The org-agent store has no headlines yet; see `org-agent-ingest-directory'"))
    (dolist (c candidates) (puthash (car c) (cdr c) table))
    (let* ((choice (completing-read
                    "Headline: "
                    (lambda (string pred action)
                      (if (eq action 'metadata)
                          '(metadata (category . org-agent-headline))
                        (complete-with-action action table string pred)))
                    nil t))
           (target (gethash choice table)))
      (org-agent--visit (nth 0 target) (nth 1 target)))))

(declare-function org-agent--headline-candidates "org-agent-module")

(defun org-agent--visit (file position)
  "Show FILE at buffer POSITION, with the headline there revealed."
  (if (file-exists-p file)
      (find-file file)
    (switch-to-buffer (or (get-buffer file) (user-error "File %s is gone" file))))
  (widen)
  (goto-char (min (max position (point-min)) (point-max)))
  (when (derived-mode-p 'org-mode)
    (org-back-to-heading t)
    (org-show-context 'link-search)
    (org-show-entry)))

(declare-function org-agent--log "org-agent-module")
(declare-function org-agent--telemetry "org-agent-module")

;;;###autoload
(defun org-agent-log ()
  "Show what org-agent did recently (the last 500 events)."
  (interactive)
  (org-agent--require-started)
  (let ((entries (org-agent--log)))
    (with-current-buffer (get-buffer-create "*org-agent-log*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (org-mode)
        (insert "#+TITLE: org-agent log\n\n")
        (dolist (e entries)
          (pcase-let ((`(,ms ,kind ,message) e))
            (insert (format "- [%s] *%s* %s\n"
                            (format-time-string "%F %T" (/ ms 1000.0))
                            kind message))))
        (goto-char (point-max))
        (setq buffer-read-only t))
      (pop-to-buffer (current-buffer)))))

(defun org-agent--status-table (title rows)
  "Insert an Org table titled TITLE with the telemetry ROWS."
  (insert (format "* %s\n" title))
  (if (null rows)
      (insert "None yet.\n\n")
    (insert "| name | calls | failures | total ms | prompt tokens | completion tokens |\n|-\n")
    (dolist (r rows)
      (let ((p (cdr r)))
        (insert (format "| %s | %d | %d | %d | %d | %d |\n"
                        (car r) (plist-get p :calls) (plist-get p :failures)
                        (plist-get p :ms) (plist-get p :prompt-tokens)
                        (plist-get p :completion-tokens)))))
    (forward-line -1)
    (org-table-align)
    (goto-char (point-max))
    (insert "\n")))

;;;###autoload
(defun org-agent-status ()
  "Show the agent's telemetry per tool and backend, and the store statistics."
  (interactive)
  (org-agent--require-started)
  (let ((telemetry (org-agent--telemetry))
        (stats (org-agent-store-stats)))
    (with-current-buffer (get-buffer-create "*org-agent-status*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (org-mode)
        (insert "#+TITLE: org-agent status\n\n")
        (org-agent--status-table "Backends" (plist-get telemetry :backends))
        (org-agent--status-table "Tools" (plist-get telemetry :tools))
        (insert "* Store\n")
        (insert (format "- files :: %d\n- headlines :: %d\n- versions :: %d\n- on disk :: %s\n- turn in flight :: %s\n"
                        (plist-get stats :files) (plist-get stats :headlines)
                        (plist-get stats :versions)
                        (file-size-human-readable (plist-get stats :bytes-on-disk))
                        (if (org-agent-busy-p) "yes" "no")))
        (goto-char (point-min))
        (setq buffer-read-only t))
      (pop-to-buffer (current-buffer)))))

;;;###autoload
(defun org-agent-store-info ()
  "Show statistics of org-agent's object store."
  (interactive)
  (org-agent--require-started)
  (let ((s (org-agent-store-stats)))
    (message "org-agent store: %d files, %d headlines, %d versions, %s on disk%s%s"
             (plist-get s :files) (plist-get s :headlines) (plist-get s :versions)
             (file-size-human-readable (plist-get s :bytes-on-disk))
             (if (> (plist-get s :duplicate-ids) 0)
                 (format ", %d duplicate IDs" (plist-get s :duplicate-ids))
               "")
             (if (plist-get s :write-error)
                 (format " — WRITE ERROR: %s" (plist-get s :write-error))
               ""))))

(provide 'org-agent)
;;; org-agent.el ends here
