;;; org-agent-runs.el --- Skills run with no user waiting -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;;; Commentary:

;; A skill runs in the background when one of its triggers fires (the
;; module evaluates save, TODO-change and schedule triggers; idle,
;; start-up and capture triggers are Emacs's events, sent from here) or
;; when a script calls `org-agent-skill-run'.  The run is a turn on the
;; module's workers: what the gates would ask the user goes to the
;; approvals queue (`org-agent-approvals'), what they allow runs through
;; the actuator, and nothing waits for the user.  Emacs starts each run
;; because the backends' keys come from auth-source, here.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org-agent-backends)
(require 'org-agent-chat)
(require 'org-agent-skills)
(require 'seq)
(org-agent--declare-module-functions)

(defcustom org-agent-skill-run-timeout 300
  "Seconds a background run of a skill may take before it is stopped."
  :type 'number
  :group 'org-agent-runs)

(defcustom org-agent-skill-max-failures 3
  "Failed background runs in a row after which a skill is suspended.
A suspended skill runs again once the skills are reloaded (saving its
file does that)."
  :type 'integer
  :group 'org-agent-runs)

(defcustom org-agent-skill-finished-functions nil
  "Functions called when a background run of a skill ends.
Each is called with the skill's name and a plist: :outcome (`done' or
`failed'), :message (the run's answer, or why it failed), :queued (the
ids of the proposals it put in the approvals queue), :request and
:seconds."
  :type 'hook
  :group 'org-agent-runs)

(defcustom org-agent-skill-runs-quiet nil
  "Non-nil means background runs report nothing in the echo area.
They are always in `org-agent-log'."
  :type 'boolean
  :group 'org-agent-runs)

(defcustom org-agent-skill-idle-seconds 300
  "Seconds of idleness after which skills triggered on idle run.
nil means never."
  :type '(choice (const :tag "Never" nil) number)
  :group 'org-agent-runs)

(defvar org-agent-runs--idle-timer nil
  "The idle timer of the skills triggered on idle.")

(defvar org-agent-approvals-queued-functions nil
  "Functions called with each `skill-run' event of kind `queued'.
`org-agent-approvals' previews and lists the proposal.")

(defun org-agent-runs--options ()
  "The options of a background run: the chat's, with no one to ask."
  (let ((options (copy-sequence (org-agent-chat-common-options))))
    (setq options (plist-put options :interactive nil))
    (setq options (plist-put options :focus nil))
    (setq options (plist-put options :run-timeout org-agent-skill-run-timeout))
    (setq options (plist-put options :max-failures org-agent-skill-max-failures))
    (if (org-agent-backends-local-p)
        ;; As in the chat: the small local model answers without tools.
        (plist-put options :tool-rounds 0)
      options)))

(defun org-agent-skill-run (name &optional text provenance)
  "Run the active skill NAME in the background, with TEXT if given.
PROVENANCE says what started it (default: this function's name); it
is shown with each proposal the run queues.  Return the request id.
What the run would have to ask the user goes to the approvals queue
\(see `org-agent-approvals'); `org-agent-skill-finished-functions' run
when it ends.  When no backend is configured and the local model is
not running, it is started first, and nil is returned."
  (org-agent--require-started)
  (let ((provenance (or provenance "org-agent-skill-run")))
    (org-agent-backends-drop-stale-local)
    (if (and (org-agent-backends-local-p) (not (org-agent-backends-local-backend)))
        (progn
          (unless (org-agent-backends-local-started-p)
            (org-agent-backends-start-local
             (lambda () (org-agent-skill-run name text provenance))
             (lambda () (message "org-agent: skill %s did not run: the local model did not start"
                                 name))))
          nil)
      (org-agent--send-privacy)
      (org-agent--skill-run name text provenance (org-agent-backends-cascade)
                            (org-agent-runs--options)))))

;;;###autoload
(defun org-agent-run-skill (name &optional text)
  "Use the skill NAME in the chat, for TEXT.
As typing \"/NAME TEXT\" in the chat: the skill is in use from the
start of the turn and the user is asked as in any chat turn."
  (interactive
   (list (completing-read "Skill: " (mapcar (lambda (s) (plist-get s :name))
                                             (org-agent-skills-active))
                          nil t)
         (read-string "Text (optional): ")))
  (org-agent-chat)
  (goto-char (point-max))
  (insert (format "/%s%s" name (if (and text (not (string-empty-p text))) (concat " " text) "")))
  (org-agent-chat-send))

(defun org-agent-runs--event (event)
  "Act on a `skill-run' EVENT: tell the user, call the hooks."
  (let ((skill (plist-get event :skill)))
    (pcase (plist-get event :kind)
      ('queued
       (run-hook-with-args 'org-agent-approvals-queued-functions event)
       (unless org-agent-skill-runs-quiet
         (message "org-agent: skill %s proposes %s; see M-x org-agent-approvals"
                  skill (plist-get event :tool))))
      ('finished
       (let ((outcome (list :outcome (plist-get event :outcome)
                            :message (plist-get event :message)
                            :queued (plist-get event :queued)
                            :request (plist-get event :request)
                            :seconds (plist-get event :seconds))))
         (when (and (eq (plist-get event :outcome) 'failed) (not org-agent-skill-runs-quiet))
           (message "org-agent: skill %s failed: %s" skill (plist-get event :message)))
         (run-hook-with-args 'org-agent-skill-finished-functions skill outcome))))))

(defcustom org-agent-shipped-skill-triggers nil
  "Shipped skills whose triggers start background runs.
The skills shipped with org-agent run when you or the model use
them.  Their triggers (a save, a schedule, start-up, idle time)
start background runs, which cost model calls, only for the skills
named here, or for all of them when this is t.  Your own skills'
triggers always fire."
  :type '(choice (const :tag "All of them" t)
                 (repeat :tag "These skills" string))
  :group 'org-agent-skills)

(defun org-agent-runs--may-fire-p (name)
  "Non-nil when skill NAME's triggers may start a background run."
  (let ((skill (seq-find (lambda (s) (equal (plist-get s :name) name))
                         (org-agent-skills-active))))
    (or (not (eq (plist-get skill :source) 'shipped))
        (eq org-agent-shipped-skill-triggers t)
        (member name org-agent-shipped-skill-triggers))))

(defun org-agent-runs--triggered (event)
  "Start the run a trigger EVENT of the module asks for.
A shipped skill's trigger starts one only when
`org-agent-shipped-skill-triggers' lets it."
  (let ((name (plist-get event :skill)))
    (when (org-agent-runs--may-fire-p name)
      (condition-case err
          (org-agent-skill-run name nil (plist-get event :provenance))
        (error (message "org-agent: skill %s did not start: %s"
                        name (error-message-string err)))))))

(defun org-agent-runs--idle ()
  "Fire the triggers of Emacs being idle."
  (when org-agent--started
    (org-agent--fire-trigger 'idle nil nil)))

(defvar org-capture-last-stored-marker)
(defvar org-note-abort)

(defun org-agent-runs--after-capture ()
  "Fire the capture triggers of the entry just captured.
The target buffer is ingested first, so that the store has the entry."
  (when-let* ((org-agent--started)
              ((not org-note-abort))
              (marker (and (boundp 'org-capture-last-stored-marker)
                           org-capture-last-stored-marker))
              (buffer (marker-buffer marker))
              (file (buffer-file-name buffer)))
    (let ((pos (marker-position marker)))
      (with-current-buffer buffer
        (when (derived-mode-p 'org-mode)
          (org-agent-ingest-buffer
           buffer t
           (lambda (_event)
             (org-agent--fire-trigger 'capture (expand-file-name file) pos))))))))

(defun org-agent-runs--start ()
  "Watch for Emacs's own trigger events: idleness and captures.
Run when org-agent starts, so that loading this file changes no hook
of Emacs itself."
  (when org-agent-runs--idle-timer
    (cancel-timer org-agent-runs--idle-timer))
  (setq org-agent-runs--idle-timer
        (and org-agent-skill-idle-seconds
             (run-with-idle-timer org-agent-skill-idle-seconds t #'org-agent-runs--idle)))
  (add-hook 'org-capture-after-finalize-hook #'org-agent-runs--after-capture))

(add-hook 'org-agent-start-hook #'org-agent-runs--start)
(add-hook 'org-agent-skill-run-functions #'org-agent-runs--event)
(add-hook 'org-agent-skill-triggered-functions #'org-agent-runs--triggered)

(provide 'org-agent-runs)
;;; org-agent-runs.el ends here
