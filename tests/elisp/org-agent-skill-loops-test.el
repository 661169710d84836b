;;; org-agent-skill-loops-test.el --- A skill's own edits do not start it again -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and actuator, against the scripted test
;; server.  A skill triggered by saves proposes an edit of the note it
;; was started for; the user approves it later in the approvals queue.
;; That edit is the skill's own, as the README says: it must not fire
;; the skill's save trigger again (another run, another model call, and
;; with the user approving each proposal, runs without end) — whether
;; the actuator saves the note at once or the user saves it afterwards.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-test-server)
(require 'org-agent-skills)
(require 'org-agent-runs)
(require 'org-agent-approvals)

(defconst org-agent-skill-loops-test--skill
  "#+SKILL_NAME: task-keeper
#+DESCRIPTION: Keeps open tasks tidy after each save.
* Trigger
:PROPERTIES:
:ON: save
:MATCH: TODO=\"TODO\"
:PATHS: tasks.org
:END:
* Prompt
Schedule what the note says should be.
"
  "A skill fired by a save of an open task in tasks.org.")

(defconst org-agent-skill-loops-test--task "Call the plumber about the leak"
  "The open task of the demo notes that the skill schedules.")

(defvar org-agent-skill-loops-test--tasks nil "The buffer of tasks.org.")
(defvar org-agent-skill-loops-test--triggered nil
  "The names of the skills the module fired, newest first.")
(defvar org-agent-skill-loops-test--finished nil
  "The (NAME OUTCOME) of finished runs, newest first.")

(defmacro org-agent-skill-loops-test--with-skill (&rest body)
  "Run BODY with the demo notes, the test server and the task-keeper skill.
`notes' is the notes' directory; `org-agent-skill-loops-test--tasks',
`--triggered' and `--finished' say what happened."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-store
     (let* ((notes (make-temp-file "org-agent-notes" t))
            (org-agent-directories (list notes))
            (skills (make-temp-file "org-agent-skills" t))
            (org-agent-skill-directories (list skills))
            (org-agent-skill-runs-quiet t)
            (org-agent-backends (org-agent-test-backends (org-agent-test-start-server)))
            (org-agent-skill-loops-test--finished nil)
            (org-agent-skill-loops-test--triggered nil)
            (org-agent-skill-loops-test--tasks nil)
            (org-agent-skill-finished-functions
             (list (lambda (name outcome)
                     (push (list name outcome) org-agent-skill-loops-test--finished))))
            (org-agent-skill-triggered-functions
             (cons (lambda (e) (push (plist-get e :skill) org-agent-skill-loops-test--triggered))
                   org-agent-skill-triggered-functions)))
       (add-hook 'after-save-hook #'org-agent--after-save)
       (unwind-protect
           (progn
             (copy-directory (expand-file-name "demo/notes" org-agent-test-root) notes nil t t)
             (dolist (f (directory-files notes t "\\.org\\'"))
               (org-agent-ingest-file f))
             (with-temp-file (expand-file-name "task-keeper.skill.org" skills)
               (insert org-agent-skill-loops-test--skill))
             (should (org-agent-test-reload-skills))
             (should (seq-find (lambda (s) (equal (plist-get s :name) "task-keeper"))
                               org-agent-skills--active))
             (setq org-agent-skill-loops-test--tasks (find-file-noselect (expand-file-name "tasks.org" notes)))
             ,@body)
         (remove-hook 'after-save-hook #'org-agent--after-save)
         (org-agent-test-kill-file-buffers notes)
         (when (get-buffer org-agent-approvals-buffer-name)
           (kill-buffer org-agent-approvals-buffer-name))
         (delete-directory notes t)
         (delete-directory skills t)
         (org-agent-test-reload-skills)))))

(defun org-agent-skill-loops-test--fired ()
  "How many times the module fired task-keeper."
  (seq-count (lambda (name) (equal name "task-keeper")) org-agent-skill-loops-test--triggered))

(defun org-agent-skill-loops-test--proposal ()
  "Have the user's save start task-keeper; return the proposal it queued.
The run proposes to schedule the task, which waits in the queue."
  (let ((id (plist-get (seq-find (lambda (n) (equal (plist-get n :title)
                                                     org-agent-skill-loops-test--task))
                                 (org-agent-query :type 'headline))
                       :id)))
    (org-agent-test-server-push
     :text "" :calls `[("schedule" ((id . ,id) (date . "2026-12-01")))])
    (org-agent-test-server-push :text "Proposed scheduling it."))
  (with-current-buffer org-agent-skill-loops-test--tasks
    (goto-char (point-min))
    (re-search-forward (concat "^\\*\\* TODO " (regexp-quote org-agent-skill-loops-test--task)))
    (end-of-line)
    (insert "\nThe plumber comes in December.")
    (undo-boundary)
    (save-buffer))
  (should (org-agent-test-wait (lambda () org-agent-skill-loops-test--finished) 60))
  (should (= (org-agent-skill-loops-test--fired) 1))
  (should (= (length (plist-get (cadr (car org-agent-skill-loops-test--finished)) :queued)) 1))
  (let ((p (car (org-agent-approvals-list))))
    (should (equal (plist-get p :skill) "task-keeper"))
    (should (org-agent-test-wait
             (lambda () (plist-get (car (org-agent-approvals-list)) :diff)) 10))
    p))

(defun org-agent-skill-loops-test--quiet-after (requests)
  "Check that nothing fires task-keeper again, nor calls the model after REQUESTS."
  ;; The save is ingested on a worker and its triggers come back as events: give them
  ;; time to arrive.
  (org-agent-test-wait (lambda () (> (org-agent-skill-loops-test--fired) 1)) 3)
  (should (= (org-agent-skill-loops-test--fired) 1))
  (should (= (length (org-agent-test-server-requests)) requests))
  (should (= (length org-agent-skill-loops-test--finished) 1)))

(ert-deftest org-agent-skill-loops-approving-a-proposal-does-not-fire-its-skill ()
  "The edit the user approves, saved by the actuator, is the proposing skill's own."
  (org-agent-skill-loops-test--with-skill
    (let* ((p (org-agent-skill-loops-test--proposal))
           (requests (length (org-agent-test-server-requests))))
      ;; Later, in a command of its own: the user approves it.
      (org-agent-test-wait #'ignore 0.5)
      (org-agent-approvals-approve (plist-get p :id))
      (with-current-buffer org-agent-skill-loops-test--tasks
        (should-not (buffer-modified-p))
        (should (string-match-p "SCHEDULED: <2026-12-01" (buffer-string))))
      (org-agent-skill-loops-test--quiet-after requests))))

(ert-deftest org-agent-skill-loops-an-approved-edit-saved-afterwards-does-not-fire-it ()
  "When the note had unsaved changes, the approved edit is saved by the user, later."
  (org-agent-skill-loops-test--with-skill
    (let* ((p (org-agent-skill-loops-test--proposal))
           (requests (length (org-agent-test-server-requests))))
      ;; The user is typing elsewhere in the note: the actuator leaves the save to them.
      (with-current-buffer org-agent-skill-loops-test--tasks
        (goto-char (point-max))
        (insert "\nA line of my own.\n")
        (undo-boundary))
      (org-agent-approvals-approve (plist-get p :id))
      (with-current-buffer org-agent-skill-loops-test--tasks
        (should (buffer-modified-p))
        (should (string-match-p "SCHEDULED: <2026-12-01" (buffer-string))))
      (org-agent-test-wait #'ignore 0.5)
      (with-current-buffer org-agent-skill-loops-test--tasks (save-buffer))
      (org-agent-skill-loops-test--quiet-after requests))))

;;; org-agent-skill-loops-test.el ends here
