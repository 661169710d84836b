;;; org-agent.el --- An AI agent that lives inside Emacs and works in your Org notes -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;; Author: The org-agent authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: outlines, tools

;;; Commentary:

;; org-agent turns your Org files into a live environment an LLM can
;; work in, safely.  Its core is a Rust dynamic module that keeps every
;; Org file you have mirrored in an object store of headlines (with
;; Merkle hashes, history, snapshots and persistence) and does its work
;; on worker threads, so Emacs never waits.
;;
;; Enable `org-agent-mode' to ingest `org-agent-directories' and keep
;; the store current as you save.  `org-agent-chat' opens the chat
;; with the agent (`org-agent-new-chat' begins another);
;; `org-agent-ask', `org-agent-summarize-buffer' and
;; `org-agent-organize-subtree' send it one request from where you
;; are.  Other commands: `org-agent-find', `org-agent-semantic-search',
;; `org-agent-embed-notes', `org-agent-context-preview',
;; `org-agent-select-model', `org-agent-interrupt', `org-agent-log',
;; `org-agent-status', `org-agent-store-info',
;; `org-agent-ingest-directory' and `org-agent-build-module'.  The
;; Elisp API (`org-agent-query', `org-agent-node', ...) is in
;; org-agent-store.el; `org-agent-define-tool' (org-agent-tools.el)
;; gives the agent tools of your own.
;;
;; The files: org-agent-base.el (the groups, the errors, the
;; module's functions), org-agent-build.el (building and loading the
;; module), org-agent-dispatch.el (the module's events, to their hooks
;; and callbacks), org-agent-store.el (the store: start-up, ingest,
;; queries), org-agent-actuator.el (the agent's edits),
;; org-agent-tools.el (tools in Elisp), org-agent-backends.el (the LLM
;; backends), org-agent-semantic.el (search by meaning),
;; org-agent-chat.el (the chat), org-agent-permissions.el (the user's
;; rules and the shell tool), org-agent-skills.el (the skills),
;; org-agent-runs.el (skills run in the background),
;; org-agent-approvals.el (what those runs propose),
;; org-agent-scans.el (the scans and the daily briefing),
;; org-agent-sentinel.el (credentials moved into auth-source), and
;; this one (the mode and the commands around the store).

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'cl-lib)
(require 'org-agent-build)
(require 'org-agent-store)
(require 'org-agent-actuator)
(require 'org-agent-tools)
(require 'org-agent-backends)
(require 'org-agent-semantic)
(require 'org-agent-chat)
(require 'org-agent-here)
(require 'org-agent-menu)
(require 'org-agent-babel)
(require 'org-agent-skills)
(require 'org-agent-runs)
(require 'org-agent-approvals)
(require 'org-agent-permissions)
(require 'org-agent-mcp)
(require 'org-agent-scans)
(org-agent--declare-module-functions)

;;;; The mode

;;;###autoload
(define-minor-mode org-agent-mode
  "Keep org-agent's object store current with your Org files.
When on, the store is loaded, the Org files under
`org-agent-directories' are ingested in the background (unchanged
files are skipped), and saving an Org buffer re-ingests it: the main
thread only copies the text, a worker parses it.  Every
`org-agent-watch-interval' seconds a worker compares the store with
the files on disk, so that files changed outside Emacs need no save."
  :global t
  :group 'org-agent
  :lighter " Agent"
  (if org-agent-mode
      (condition-case err
          (progn
            (add-hook 'after-save-hook #'org-agent--after-save)
            (if (org-agent--start)
                (progn (when (org-agent--directories) (org-agent-ingest-directory))
                       (org-agent--watch-start))
              (add-hook 'org-agent--after-build-functions #'org-agent--resume-mode)))
        (error
         (setq org-agent-mode nil)
         (remove-hook 'after-save-hook #'org-agent--after-save)
         (signal (car err) (cdr err))))
    (org-agent--watch-stop)
    (remove-hook 'after-save-hook #'org-agent--after-save)))

(defun org-agent--resume-mode ()
  "Finish turning on `org-agent-mode' once the module was built."
  (remove-hook 'org-agent--after-build-functions #'org-agent--resume-mode)
  (when (and org-agent-mode (org-agent--start))
    (when (org-agent--directories) (org-agent-ingest-directory))
    (org-agent--watch-start)))

;;;; Finding headlines

;;;###autoload
(defun org-agent-find ()
  "Jump to a headline chosen from the store, by outline path, tags and TODO."
  (interactive)
  (org-agent--require-started)
  (let ((target (org-agent--read-headline "Headline: ")))
    (org-agent--visit (nth 0 target) (nth 1 target))))

(defun org-agent--visit (file position)
  "Show FILE at buffer POSITION, with the headline there revealed."
  (if (file-exists-p file)
      (find-file file)
    (switch-to-buffer (or (get-buffer file) (user-error "File %s is gone" file))))
  (widen)
  (goto-char (min (max position (point-min)) (point-max)))
  (when (derived-mode-p 'org-mode)
    (org-back-to-heading t)
    (org-agent--show-context 'link-search)
    (org-agent--show-entry)))

;;;; The log

(defcustom org-agent-log-refresh-interval 1
  "Seconds between refreshes of `*org-agent-log*' while it is shown.
nil: refresh it only on \\[revert-buffer] or \\[org-agent-log]."
  :type '(choice (const :tag "Only on request" nil) number)
  :group 'org-agent-module)

(defvar-local org-agent-log--seq 0
  "The sequence number of the newest log entry the buffer shows (0: none).")

(defvar-local org-agent-log--count 0
  "How many log entries the buffer shows.")

(defvar-local org-agent-log--timer nil
  "The timer refreshing this log buffer while it is shown.")

(defvar org-agent-log-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "g" #'revert-buffer)
    (define-key map "q" #'quit-window)
    map)
  "Keymap of `org-agent-log-mode'.")

(define-derived-mode org-agent-log-mode org-mode "Agent-Log"
  "Major mode of `*org-agent-log*': what org-agent did recently.
The buffer follows the log while a window shows it (see
`org-agent-log-refresh-interval'), and stays at the end when point
was there; \\[revert-buffer] refreshes it at once.

\\{org-agent-log-mode-map}"
  :interactive nil
  (setq buffer-read-only t)
  (setq-local revert-buffer-function (lambda (_ignore-auto _noconfirm)
                                       (org-agent-log--refresh)))
  (add-hook 'window-buffer-change-functions #'org-agent-log--shown nil t)
  (add-hook 'kill-buffer-hook #'org-agent-log--stop nil t)
  (add-hook 'change-major-mode-hook #'org-agent-log--stop nil t))

(defun org-agent-log--line (entry &optional seq)
  "The text of the log ENTRY, a list (TIME-MS KIND MESSAGE).
With SEQ, the entry's sequence number, the text carries it as the
property `org-agent-log-seq'."
  (pcase-let ((`(,ms ,kind ,message) entry))
    (let ((line (format "- [%s] *%s* %s\n"
                        (format-time-string "%F %T" (/ ms 1000.0))
                        kind
                        ;; A message of several lines stays inside its list item.
                        (replace-regexp-in-string "\n" "\n  " message t t))))
      (if seq (propertize line 'org-agent-log-seq seq) line))))

(defconst org-agent-log--header "#+TITLE: org-agent log\n\n"
  "The first lines of the log buffer, before its entries.")

(defun org-agent-log--trim (count)
  "Delete the COUNT oldest entries from the top of the log buffer.
So are the notes of missed entries (overlays) on them."
  (let* ((beg (+ (point-min) (length org-agent-log--header)))
         (end beg))
    (dotimes (_ count)
      (setq end (next-single-property-change end 'org-agent-log-seq nil (point-max))))
    (dolist (ov (overlays-in beg end))
      (when (overlay-get ov 'org-agent-log-missed)
        (delete-overlay ov)))
    (delete-region beg end)
    (setq org-agent-log--count (- org-agent-log--count count))))

(defun org-agent-log--note-missed (pos missed)
  "Note at POS, before an entry, that MISSED entries fell out unseen.
The note is an overlay: the text stays the log's entries."
  ;; Empty, and advancing neither end: the entries inserted at POS go after it.
  (let ((ov (make-overlay pos pos)))
    (overlay-put ov 'org-agent-log-missed missed)
    (overlay-put ov 'before-string
                 (propertize (format "- %d %s fell out of the log before this buffer \
showed %s\n"
                                     missed (if (= missed 1) "entry" "entries")
                                     (if (= missed 1) "it" "them"))
                             'face 'warning))))

(defun org-agent-log--refresh ()
  "Bring the current log buffer up to date with the module's log.
Only the entries logged since the last refresh are copied, and
added at the end; the oldest are deleted from the top as they fall
out of the log, which keeps `org-agent--log-capacity' entries.  The
rest of the text is left alone, so point and the windows stay where
they are, except that a window (or point) at the end stays at the
end.  When entries fell out of the log before the buffer showed
them, a note before the next entry says how many."
  (let ((new (org-agent--log-since org-agent-log--seq)))
    (when new
      (let* ((inhibit-read-only t)
             (at-end (eobp))
             (windows-at-end (seq-filter (lambda (w) (= (window-point w) (point-max)))
                                         (get-buffer-window-list nil nil t)))
             (missed (- (caar new) org-agent-log--seq 1)))
        (save-excursion
          ;; Nothing shown yet (a new buffer, or the mode set again): start afresh.
          (when (zerop org-agent-log--seq)
            (dolist (ov (overlays-in (point-min) (point-max)))
              (when (overlay-get ov 'org-agent-log-missed) (delete-overlay ov)))
            (erase-buffer)
            (setq org-agent-log--count 0)
            (insert org-agent-log--header))
          (goto-char (point-max))
          ;; Entries the ring dropped before this buffer saw them; before the buffer
          ;; showed any entry, it shows the log's last ones, as it always did.
          (when (and (> missed 0) (> org-agent-log--seq 0))
            (org-agent-log--note-missed (point) missed))
          (dolist (entry new)
            (insert (org-agent-log--line (cdr entry) (car entry))))
          (setq org-agent-log--seq (car (car (last new)))
                org-agent-log--count (+ org-agent-log--count (length new)))
          (let ((excess (- org-agent-log--count (org-agent--log-capacity))))
            (when (> excess 0) (org-agent-log--trim excess))))
        (when at-end (goto-char (point-max)))
        (dolist (w windows-at-end) (set-window-point w (point-max)))))))

(defun org-agent-log--start ()
  "Refresh the current log buffer every `org-agent-log-refresh-interval' seconds.
Only while a window shows it: the timer stops itself when none does,
and `org-agent-log--shown' starts it again."
  (when (and org-agent-log-refresh-interval (not (timerp org-agent-log--timer)))
    (let ((buffer (current-buffer))
          (timer nil))
      (setq timer
            (run-with-timer
             org-agent-log-refresh-interval org-agent-log-refresh-interval
             (lambda ()
               (if (not (and (buffer-live-p buffer) (get-buffer-window buffer 'visible)))
                   (progn (cancel-timer timer)
                          (when (buffer-live-p buffer)
                            (with-current-buffer buffer (setq org-agent-log--timer nil))))
                 (with-current-buffer buffer
                   (condition-case err
                       (org-agent-log--refresh)
                     ;; Once, not every second: the module was unloaded or the
                     ;; runtime shut down.
                     (error (org-agent-log--stop)
                            (message "org-agent: the log stopped refreshing: %s"
                                     (error-message-string err)))))))))
      (setq org-agent-log--timer timer))))

(defun org-agent-log--stop ()
  "Stop refreshing the current log buffer."
  (when (timerp org-agent-log--timer)
    (cancel-timer org-agent-log--timer))
  (setq org-agent-log--timer nil))

(defun org-agent-log--shown (window)
  "Refresh the log buffer shown in WINDOW, and follow the log again."
  (with-current-buffer (window-buffer window)
    (when (derived-mode-p 'org-agent-log-mode)
      ;; Run by redisplay: an error here must not disturb it.
      (with-demoted-errors "org-agent: cannot refresh the log: %S"
        (org-agent-log--refresh)
        (org-agent-log--start)))))

;;;###autoload
(defun org-agent-log ()
  "Show what org-agent did recently (the last 500 events), as it happens.
The buffer refreshes itself while it is shown; see `org-agent-log-mode'."
  (interactive)
  (org-agent--require-started)
  (let ((buffer (get-buffer-create "*org-agent-log*")))
    (with-current-buffer buffer
      (unless (derived-mode-p 'org-agent-log-mode)
        (org-agent-log-mode))
      (org-agent-log--refresh)
      (goto-char (point-max)))
    (pop-to-buffer buffer)
    (with-current-buffer buffer
      (org-agent-log--start))
    buffer))

;;;; Status

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

(defun org-agent--status-skills ()
  "Insert how often each skill ran and what waits for approval.
For `org-agent-status'."
  (let ((ran (seq-filter (lambda (s) (or (> (plist-get s :runs) 0)
                                         (memq (plist-get s :status) '(suspended failed))))
                         (org-agent-skills-list)))
        (pending (length (org-agent-approvals-list))))
    (insert "* Skills\n")
    (insert (format "- active :: %d\n- approvals waiting :: %d%s\n"
                    (length (org-agent-skills-active)) pending
                    (if (> pending 0) " (M-x org-agent-approvals)" "")))
    (dolist (s ran)
      (insert (format "- %s :: %s, %d runs, %d failed%s\n"
                      (plist-get s :name) (plist-get s :status)
                      (plist-get s :runs) (plist-get s :failures)
                      (if (plist-get s :reason) (format " — %s" (plist-get s :reason)) ""))))))

(defun org-agent--status-cost ()
  "Insert what the chat's conversation and today's requests cost.
For `org-agent-status'.  Today is the budget's day (UTC), every
conversation and background run; the conversation is the chat buffer's
since it was opened (a continued one starts again from zero)."
  (let ((conv (org-agent-chat-spent))
        (today (org-agent--spent-today)))
    (insert "* Cost\n")
    (when conv
      (insert (format "- this conversation :: %s tokens, %s\n"
                      (org-agent-chat-format-tokens (plist-get conv :tokens)
                                                    (plist-get conv :estimated))
                      (org-agent-chat-format-cost (plist-get conv :cost)
                                                  (plist-get conv :unknown)))))
    (insert (format "- today (%s UTC) :: %s tokens, %s%s\n"
                    (plist-get today :day)
                    (org-agent-chat-format-tokens (plist-get today :tokens))
                    (org-agent-chat-format-cost (plist-get today :cost))
                    (if (> (plist-get today :unpriced-tokens) 0)
                        (format " (and %s tokens at unknown prices)"
                                (org-agent-chat-format-tokens
                                 (plist-get today :unpriced-tokens)))
                      "")))))

;;;###autoload
(defun org-agent-status ()
  "Show the agent's telemetry per tool and backend, cost, and the store statistics."
  (interactive)
  (if (and org-agent--store-waiting (not (org-agent--start)))
      (org-agent--status-waiting)
    (org-agent--status-running)))

(defun org-agent--status-waiting ()
  "Show that org-agent waits for another Emacs to let go of the store."
  (with-current-buffer (get-buffer-create "*org-agent-status*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (org-mode)
      (insert "#+TITLE: org-agent status\n\n* Store\n"
              (format "- waiting :: %s\n" org-agent--store-waiting)
              (format "- tries again :: every %s seconds\n" org-agent-store-wait-interval))
      (goto-char (point-min))
      (setq buffer-read-only t))
    (pop-to-buffer (current-buffer))))

(defun org-agent--status-running ()
  "Show the status of a running org-agent."
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
        (org-agent--status-skills)
        (org-agent--status-cost)
        (org-agent-mcp-status-section)
        (insert "* Store\n")
        (insert (format "- state directory :: %s (this Emacs writes it; another waits)\n"
                        (abbreviate-file-name (expand-file-name org-agent-state-directory))))
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
