;;; run-batch.el --- scripts/run in batch Emacs: open the chat, ask, report -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded by scripts/run when ORG_AGENT_RUN_BATCH is set, once
;; `org-agent-mode' is on.  It opens the chat as a newcomer does and
;; prints "run: *org-agent-chat* is open on DIR", "run: org-agent
;; loaded from FILE" (the byte-compiled copy, see scripts/compile-elisp)
;; and "run: chat open after N s" (N counts from ORG_AGENT_RUN_START,
;; the epoch second scripts/run started).  With ORG_AGENT_RUN_ASK it then sends that
;; message as a user does (typed after the last "* You", then
;; `org-agent-chat-send'), waits for the turn to end, at most
;; ORG_AGENT_RUN_WAIT seconds (600), prints "run: first answer after N
;; s: ANSWER" and exits 0; when no answer comes (an error, the local
;; model server stopped, the time is up) it says why and exits 1.

;;; Code:

(require 'org-agent)
(require 'org-agent-chat)

(defvar org-agent-turn-finished-functions)

(defconst org-agent-run-batch--start
  (or (ignore-errors (string-to-number (getenv "ORG_AGENT_RUN_START"))) (float-time))
  "When scripts/run started, in seconds since the epoch.")

(defun org-agent-run-batch--since-start ()
  "Seconds since scripts/run started, rounded."
  (round (- (float-time) org-agent-run-batch--start)))

(defun org-agent-run-batch--local-server-stopped-p ()
  "Whether a local model server was started and is not running any more."
  (let ((buffer (get-buffer " *org-agent-local-llm*")))
    (and buffer (not (get-buffer-process buffer)))))

(defun org-agent-run-batch--last-answer (chat)
  "The text under the last \"* Assistant\" heading of CHAT, trimmed."
  (with-current-buffer chat
    (save-excursion
      (goto-char (point-max))
      (if (re-search-backward "^\\* Assistant[ \t]*$" nil t)
          (let ((start (line-end-position)))
            (string-trim (buffer-substring-no-properties
                          start (if (re-search-forward "^\\* You[ \t]*$" nil t)
                                    (match-beginning 0)
                                  (point-max)))))
        ""))))

(defun org-agent-run-batch--fail (chat why)
  "Say WHY no answer came, show CHAT and the local server's output; exit 1."
  (princ (format "run: no answer after %d s: %s\n" (org-agent-run-batch--since-start) why))
  (when (buffer-live-p chat)
    (princ (format "run: the chat buffer:\n%s\n"
                   (with-current-buffer chat (buffer-substring-no-properties (point-min) (point-max))))))
  (let ((server (get-buffer " *org-agent-local-llm*")))
    (when server
      (princ (format "run: the local model server's output:\n%s\n"
                     (with-current-buffer server (buffer-string))))))
  (kill-emacs 1))

(defun org-agent-run-batch--ask (chat question)
  "Send QUESTION in CHAT, wait for the answer, print it; exit 1 without one."
  (let* ((wait (or (ignore-errors (string-to-number (getenv "ORG_AGENT_RUN_WAIT"))) 600))
         (deadline (+ (float-time) (if (> wait 0) wait 600)))
         (finished nil)
         (answer nil)
         (hook (lambda (_conversation text) (setq finished t answer text))))
    (add-hook 'org-agent-turn-finished-functions hook)
    (princ (format "run: asking %S\n" question))
    (with-current-buffer chat
      (goto-char (point-max))
      (insert question)
      (org-agent-chat-send))
    (while (and (not finished)
                (< (float-time) deadline)
                (not (org-agent-run-batch--local-server-stopped-p)))
      (accept-process-output nil 0.5))
    (remove-hook 'org-agent-turn-finished-functions hook)
    (cond
     ((not finished)
      (org-agent-run-batch--fail
       chat (if (org-agent-run-batch--local-server-stopped-p)
                "the local model server stopped"
              (format "the turn did not end in %d s" wait))))
     ((not (and (stringp answer) (not (string-empty-p (string-trim answer)))))
      (org-agent-run-batch--fail chat "the turn ended without an answer"))
     ((string-empty-p (org-agent-run-batch--last-answer chat))
      (org-agent-run-batch--fail chat "the answer is not shown in the chat"))
     (t
      (princ (format "run: first answer after %d s: %s\n"
                     (org-agent-run-batch--since-start)
                     (string-trim answer)))))))

(let ((chat (or (org-agent-chat) (get-buffer org-agent-chat-buffer-name)))
      (question (getenv "ORG_AGENT_RUN_ASK")))
  (unless (buffer-live-p chat)
    (org-agent-run-batch--fail nil "the chat did not open"))
  (princ (format "run: %s is open on %s\n" (buffer-name chat) (car org-agent-directories)))
  (princ (format "run: org-agent loaded from %s\n" (symbol-file 'org-agent-chat 'defun)))
  (princ (format "run: chat open after %d s\n" (org-agent-run-batch--since-start)))
  (when (and question (not (string-empty-p question)))
    (org-agent-run-batch--ask chat question))
  (kill-emacs 0))

;;; run-batch.el ends here
