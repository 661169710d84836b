;;; org-agent-dispatch.el --- The module's events, handed to whoever waits -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every event of the module passes through here.  The module's worker
;; threads never call Emacs: they queue events in Rust and write one
;; byte to a pipe process, the wake-up channel, whose filter drains the
;; queue on the main thread.  Each event goes to the hook of its kind
;; (`org-agent-ingest-functions', `org-agent-chat-functions',
;; `org-agent-actuate-functions'...), then to the callback waiting for
;; its request, if any (`org-agent--add-callback').  The store, the
;; chat, the actuator and the skills add their handlers to the hooks.

;;; Code:

(require 'org-agent-base)
(require 'subr-x)
(org-agent--declare-module-functions)

;;;; Option

(defun org-agent--set-redisplay-interval-option (symbol value)
  "Set SYMBOL to VALUE and hand it to the module if it is loaded.
The module refuses a value out of range before anything is set."
  (when (fboundp 'org-agent--set-redisplay-interval)
    (org-agent--set-redisplay-interval value))
  (set-default symbol value))

;; Here, beside the wake-up channel it paces, so that it reaches the module whenever the
;; module is configured, whichever files are loaded.
(defcustom org-agent-chat-redisplay-interval 0.1
  "How often, in seconds, a streaming answer wakes Emacs (0 to 10).
The module holds streamed text back for that long and hands over
the pieces that arrived meanwhile together, so a fast stream costs
Emacs a few insertions and redisplays a second, not one per token.
The chat inserts each piece as it arrives.  Set it with
`customize-set-variable' or Customize: once org-agent has started, a
plain `setq' does not reach the module."
  :type 'number
  :set #'org-agent--set-redisplay-interval-option
  :group 'org-agent-chat)

;;;; Hooks and callbacks

(defvar org-agent-ingest-functions nil
  "Functions called with an event plist after each ingest reported by a worker.
The plist has :type (`ingested', `superseded', `removed' or
`failed'), :file, and for `ingested' :nodes and :changed, for
`removed' (a file gone from disk left the store) :nodes.  A pass
comparing the store with the disk (`org-agent-reconcile') reports
each file it stored or removed so.")

(defvar org-agent-directory-ingest-functions nil
  "Functions called with each event of a directory ingest.
Those are `progress' (:done and :total files), `directory-done' (the
counts) and `failed' (which may be another request's failure: compare
:request).  The store reports the progress and forgets the ingest.")

(defvar org-agent-chat-functions nil
  "Functions called with each chat event plist from the module.
The plist has :request, :conversation and :kind (`text', `reasoning',
`tool', `ask', `tool-result', `retrying', `usage', `done' or `error').")

(defvar org-agent-actuate-functions nil
  "Functions called with each request of the module to run an Emacs action.
The plist has :request, :reply and :action; the actuator answers
with `org-agent--actuated'.")

(defvar org-agent-skill-run-functions nil
  "Functions called with each `skill-run' event plist from the module.
The plist has :request, :skill and :kind (`started', `queued' or
`finished').")

(defvar org-agent-skill-triggered-functions nil
  "Functions called with each `skill-triggered' event plist (:skill :provenance).")

(defvar org-agent--wake-process nil
  "The pipe process the module's workers write to when events are waiting.")

(defvar org-agent--callbacks (make-hash-table)
  "Request id → function called with the request's final event.")

(defun org-agent--add-callback (request callback)
  "Call CALLBACK with the final event of REQUEST, after any callback already set."
  (let ((before (gethash request org-agent--callbacks)))
    (puthash request
             (if before
                 (lambda (event) (funcall before event) (funcall callback event))
               callback)
             org-agent--callbacks)))

;;;; The wake-up channel

(defun org-agent--open-channel ()
  "Create the wake-up pipe process and hand it to the module."
  (unless (process-live-p org-agent--wake-process)
    (setq org-agent--wake-process
          (make-pipe-process :name "org-agent-wake"
                             :buffer nil
                             :noquery t
                             :coding 'binary
                             :filter #'org-agent--wake-filter
                             :sentinel #'ignore))
    (org-agent--set-channel org-agent--wake-process)))

(defun org-agent--wake-filter (_process _output)
  "Drain and dispatch the module's events."
  (org-agent-process-events))

(defun org-agent-process-events ()
  "Handle every event the module's workers have queued.  Return how many."
  (let ((events (org-agent--drain)))
    (dolist (event events)
      (condition-case err
          (org-agent--dispatch event)
        (error (message "org-agent: error handling %S: %s"
                        (plist-get event :type) (error-message-string err)))))
    (length events)))

(defun org-agent--dispatch (event)
  "Act on one EVENT plist from the module."
  (let ((request (plist-get event :request)))
    (pcase (plist-get event :type)
      ((or 'progress 'directory-done)
       (run-hook-with-args 'org-agent-directory-ingest-functions event))
      ('failed
       ;; A failure of a request someone waits for is theirs to report.
       (unless (gethash request org-agent--callbacks)
         (message "org-agent: %s" (plist-get event :message)))
       (run-hook-with-args 'org-agent-directory-ingest-functions event)
       (run-hook-with-args 'org-agent-ingest-functions event))
      ((or 'ingested 'superseded 'removed)
       (run-hook-with-args 'org-agent-ingest-functions event))
      ('chat
       (run-hook-with-args 'org-agent-chat-functions event))
      ('actuate
       (run-hook-with-args 'org-agent-actuate-functions event))
      ('skill-run
       (run-hook-with-args 'org-agent-skill-run-functions event))
      ('skill-triggered
       (run-hook-with-args 'org-agent-skill-triggered-functions event)))
    (when-let ((callback (and (memq (plist-get event :type)
                                    '(ingested superseded failed directory-done reconciled
                                               embedded search-results preview models
                                               skills-loaded mcp))
                              (gethash request org-agent--callbacks))))
      (remhash request org-agent--callbacks)
      (funcall callback event))))

(provide 'org-agent-dispatch)
;;; org-agent-dispatch.el ends here
