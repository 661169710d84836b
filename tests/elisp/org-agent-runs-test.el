;;; org-agent-runs-test.el --- Background skill runs and the approvals queue -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and actuator, against the scripted test
;; server: a skill run with no user waiting queues the edit it proposes
;; (the note unchanged), the proposal carries its diff and survives in
;; the queue's Org file, approving it in `org-agent-approvals' changes
;; the note as one undo step; a denied one changes nothing; a skill
;; that keeps failing is suspended; "/NAME" in the chat puts a skill in
;; use from the start of the turn.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-test-server)
(require 'org-agent-chat)
(require 'org-agent-skills)
(require 'org-agent-runs)
(require 'org-agent-approvals)
(require 'cl-lib)

(defconst org-agent-runs-test--skill
  "#+SKILL_NAME: plumbing
#+DESCRIPTION: Use when the plumber has been.
* Trigger
:PROPERTIES:
:ON: user
:END:
* Prompt
Close the plumbing tasks that are done.
"
  "A skill for the runs.")

(defmacro org-agent-runs-test--with-skill (&rest body)
  "Run BODY with a store, the demo notes, the test server and the skill loaded.
`notes' is the notes' directory, `finished' the list of (NAME
OUTCOME) of finished runs, newest first."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-store
     (let* ((notes (make-temp-file "org-agent-notes" t))
            (org-agent-directories (list notes)) ; edits stay inside the notes' directories
            (skills (make-temp-file "org-agent-skills" t))
            (org-agent-skill-directories (list skills))
            (org-agent-skill-runs-quiet t)
            (org-agent-backends (org-agent-test-backends (org-agent-test-start-server)))
            (finished nil)
            (org-agent-skill-finished-functions
             (list (lambda (name outcome) (push (list name outcome) finished)))))
       (ignore finished)
       (unwind-protect
           (progn
             (copy-directory (expand-file-name "demo/notes" org-agent-test-root) notes nil t t)
             (dolist (f (directory-files notes t "\\.org\\'"))
               (org-agent-ingest-file f))
             (with-temp-file (expand-file-name "plumbing.skill.org" skills)
               (insert org-agent-runs-test--skill))
             (should (org-agent-test-reload-skills))
             (should (eq (plist-get (seq-find (lambda (s) (equal (plist-get s :name) "plumbing"))
                                              (org-agent-skills-list))
                                    :status)
                         'active))
             ,@body)
         (org-agent-test-kill-file-buffers notes)
         (when (get-buffer org-agent-approvals-buffer-name)
           (kill-buffer org-agent-approvals-buffer-name))
         (delete-directory notes t)
         (delete-directory skills t)
         (org-agent-test-reload-skills)))))

(defun org-agent-runs-test--id (title)
  "The store id of the headline TITLE."
  (plist-get (seq-find (lambda (n) (equal (plist-get n :title) title))
                       (org-agent-query :type 'headline))
             :id))

(defun org-agent-runs-test--propose-done (title)
  "Script the server: close TITLE, then report."
  (org-agent-test-server-push
   :text "" :calls `[("set_todo" ((id . ,(org-agent-runs-test--id title)) (state . "DONE")))])
  (org-agent-test-server-push :text "Proposed closing it."))

(ert-deftest org-agent-runs-a-background-edit-waits-in-the-queue-until-approved ()
  "A background run queues its edit; approved, the note changes as one undo step."
  (org-agent-runs-test--with-skill
    (let* ((file (expand-file-name "tasks.org" notes))
           (tasks (find-file-noselect file))
           (before (with-current-buffer tasks (buffer-string))))
      (org-agent-runs-test--propose-done "Call the plumber about the leak")
      (let ((request (org-agent-skill-run "plumbing" "The plumber came." "a test")))
        (should (integerp request))
        (should (org-agent-test-wait (lambda () finished) 60))
        (pcase-let ((`(,name ,outcome) (car finished)))
          (should (equal name "plumbing"))
          (should (eq (plist-get outcome :outcome) 'done))
          (should (equal (plist-get outcome :message) "Proposed closing it."))
          (should (eql (plist-get outcome :request) request))
          (should (= (length (plist-get outcome :queued)) 1))))
      ;; Nothing changed: the run had no one to ask.
      (should (equal (with-current-buffer tasks (buffer-string)) before))
      (let ((first-request (car (org-agent-test-server-requests))))
        ;; The skill was in use from the start, and the run said why it ran.
        (should (string-match-p "Close the plumbing tasks that are done"
                                (cdr (assoc "content" (car (cdr (assoc "messages" first-request)))))))
        (should (string-match-p "because of: a test"
                                (cdr (assoc "content" (cadr (cdr (assoc "messages" first-request)))))))
        ;; The model was told the edit waits for the user.
        (should (string-match-p "queued as proposal #1"
                                (format "%S" (nth 1 (org-agent-test-server-requests))))))
      (let ((proposals (org-agent-approvals-list)))
        (should (= (length proposals) 1))
        (let ((p (car proposals)))
          (should (eq (plist-get p :state) 'pending))
          (should (equal (plist-get p :skill) "plumbing"))
          (should (equal (plist-get p :tool) "set_todo"))
          (should (equal (plist-get p :provenance) "a test"))
          ;; Emacs previewed it when it was queued.
          (should (org-agent-test-wait
                   (lambda () (plist-get (car (org-agent-approvals-list)) :diff)) 10))
          (should (string-match-p "^\\+\\*\\* DONE Call the plumber"
                                  (plist-get (car (org-agent-approvals-list)) :diff)))))
      ;; The queue is an Org file a person can read.
      (should (org-agent-test-wait
               (lambda ()
                 (with-temp-buffer
                   (insert-file-contents (org-agent--approvals-file))
                   (string-match-p "^#\\+begin_src diff" (buffer-string))))
               10))
      (with-current-buffer (progn (org-agent-approvals) org-agent-approvals-buffer-name)
        (goto-char (point-min))
        (should (search-forward "#1  set_todo  (skill plumbing)" nil t))
        (should (search-forward "DONE Call the plumber" nil t))
        (should (eq (key-binding "a") #'org-agent-approvals-approve-at-point))
        (call-interactively (key-binding "a"))
        (goto-char (point-min))
        (should (search-forward "Nothing waits for your approval" nil t)))
      (with-current-buffer tasks
        (should (string-match-p "^\\*\\* DONE Call the plumber about the leak" (buffer-string)))
        (undo-boundary)
        (let ((last-command nil)) (undo))
        (should (equal (buffer-string) before)))
      (should-not (org-agent-approvals-list))
      (should (eq (plist-get (car (org-agent-approvals-list t)) :state) 'approved))
      ;; The audit names the skill that proposed it, and the answer (written on a worker).
      (let ((audit (expand-file-name "audit.org" org-agent-state-directory)))
        (should (org-agent-test-wait
                 (lambda ()
                   (with-temp-buffer
                     (insert-file-contents audit)
                     (string-match-p
                      "user approved in the approvals queue (proposal #1 of the skill plumbing) set-todo"
                      (buffer-string))))
                 10))
        (with-temp-buffer
          (insert-file-contents audit)
          (should (string-match-p "ask set-todo\n\\(?:.*\n\\)*?:SKILL: +plumbing\n"
                                  (buffer-string)))
          (should (string-match-p "user queued for the user's approval set-todo"
                                  (buffer-string))))))))

(ert-deftest org-agent-runs-the-queue-survives-a-restart-and-a-denial-changes-nothing ()
  "Proposals outlive the store's reopening; denying one settles it and runs nothing."
  (org-agent-runs-test--with-skill
    (let* ((tasks (find-file-noselect (expand-file-name "tasks.org" notes)))
           (before (with-current-buffer tasks (buffer-string))))
      (org-agent-runs-test--propose-done "Call the plumber about the leak")
      (org-agent-skill-run "plumbing")
      (should (org-agent-test-wait (lambda () finished) 60))
      (should (org-agent-test-wait
               (lambda () (plist-get (car (org-agent-approvals-list)) :diff)) 10))
      (org-agent--store-flush)
      (org-agent--store-close)
      (should-not (org-agent-approvals-list))
      (org-agent--store-open org-agent-test-state)
      (let ((p (car (org-agent-approvals-list))))
        (should (eq (plist-get p :state) 'pending))
        (should (string-match-p "DONE Call the plumber" (plist-get p :diff)))
        (org-agent-approvals-deny (plist-get p :id)))
      (should-not (org-agent-approvals-list))
      (should (eq (plist-get (car (org-agent-approvals-list t)) :state) 'denied))
      (should (equal (with-current-buffer tasks (buffer-string)) before))
      (should-error (org-agent-approvals-deny 1) :type 'user-error))))

(ert-deftest org-agent-runs-a-skill-that-keeps-failing-is-suspended ()
  "After `org-agent-skill-max-failures' failed runs in a row the skill does not run."
  (org-agent-runs-test--with-skill
    (let* ((org-agent-skill-max-failures 2)
           (stats-of (lambda ()
                       (or (seq-find (lambda (s) (equal (plist-get s :name) "plumbing"))
                                     (org-agent--skill-stats))
                           '(:runs 0 :failures 0))))
           (earlier (funcall stats-of)))
      (dotimes (i 2)
        (org-agent-test-server-push :status 400 :message "bad request")
        (org-agent-skill-run "plumbing")
        (should (org-agent-test-wait (lambda () (= (length finished) (1+ i))) 60))
        (should (eq (plist-get (cadr (car finished)) :outcome) 'failed)))
      (let ((stats (funcall stats-of)))
        (should (= (plist-get stats :runs) (+ 2 (plist-get earlier :runs))))
        (should (= (plist-get stats :failures) (+ 2 (plist-get earlier :failures))))
        (should (string-match-p "2 failures in a row" (plist-get stats :suspended))))
      (should (eq (plist-get (seq-find (lambda (s) (equal (plist-get s :name) "plumbing"))
                                       (org-agent-skills-list))
                             :status)
                  'suspended))
      (should (string-match-p "suspended"
                              (cadr (should-error (org-agent-skill-run "plumbing")
                                                  :type 'org-agent-error))))
      (org-agent-status)
      (with-current-buffer "*org-agent-status*"
        (should (string-match-p "^- plumbing :: suspended, [0-9]+ runs, [0-9]+ failed — 2 failures in a row"
                                (buffer-string)))
        (kill-buffer))
      ;; Loading the skills again lifts it.
      (org-agent-test-reload-skills)
      (org-agent-test-server-push :text "Fine now.")
      (org-agent-skill-run "plumbing")
      (should (org-agent-test-wait (lambda () (= (length finished) 3)) 60))
      (should (eq (plist-get (cadr (car finished)) :outcome) 'done)))))

(ert-deftest org-agent-runs-slash-name-in-the-chat-uses-the-skill ()
  "\"/plumbing text\" sends text with the skill's prompt in the system prompt."
  (org-agent-runs-test--with-skill
    (let ((done nil)
          (org-agent-turn-finished-functions nil))
      (add-hook 'org-agent-turn-finished-functions (lambda (&rest _) (setq done t)))
      (org-agent-test-server-push :text "Done.")
      (when (get-buffer org-agent-chat-buffer-name)
        (with-current-buffer org-agent-chat-buffer-name (set-buffer-modified-p nil))
        (kill-buffer org-agent-chat-buffer-name))
      (with-current-buffer (org-agent-chat)
        (goto-char (point-max))
        (insert "/plumbing the plumber came")
        (org-agent-chat-send)
        (should (org-agent-test-wait (lambda () done) 60)))
      (let* ((messages (cdr (assoc "messages" (car (org-agent-test-server-requests)))))
             (system (cdr (assoc "content" (car messages))))
             (user (cdr (assoc "content" (car (last messages))))))
        (should (string-match-p "Close the plumbing tasks that are done" system))
        (should (equal user "the plumber came")))
      ;; A slash that names no skill is plain text.
      (should (equal (org-agent-chat--skill-invocation "/etc/hosts is broken")
                     '(nil . "/etc/hosts is broken"))))))

(ert-deftest org-agent-runs-the-list-of-skills-shows-runs-and-disables ()
  "`org-agent-skills' shows triggers, tests and runs; d disables a skill, e enables it."
  (org-agent-runs-test--with-skill
    (let ((plumbing (lambda () (seq-find (lambda (s) (equal (plist-get s :name) "plumbing"))
                                         (org-agent-skills-list))))
          (org-agent-disabled-skills nil))
      (should (equal (plist-get (funcall plumbing) :triggers) '(user)))
      (should (eql (plist-get (funcall plumbing) :tests-failed) 0))
      (let ((runs (plist-get (funcall plumbing) :runs)))
        (org-agent-test-server-push :text "Nothing to do.")
        (with-current-buffer (progn (org-agent-skills) org-agent-skills-buffer-name)
          (goto-char (point-min))
          (search-forward "plumbing")
          (call-interactively (key-binding "r")))
        (should (org-agent-test-wait (lambda () finished) 60))
        (should (= (plist-get (funcall plumbing) :runs) (1+ runs)))
        (should (plist-get (funcall plumbing) :last-run)))
      (cl-letf (((symbol-function 'customize-save-variable)
                 (lambda (var value) (set var value))))
        (with-current-buffer org-agent-skills-buffer-name
          (goto-char (point-min))
          (search-forward "plumbing")
          (call-interactively (key-binding "d")))
        (should (org-agent-test-wait
                 (lambda () (eq (plist-get (funcall plumbing) :status) 'disabled)) 30))
        (should (equal org-agent-disabled-skills '("plumbing")))
        (should-error (org-agent-skill-run "plumbing") :type 'org-agent-error)
        (with-current-buffer org-agent-skills-buffer-name
          (goto-char (point-min))
          (search-forward "plumbing")
          (call-interactively (key-binding "e")))
        (should (org-agent-test-wait
                 (lambda () (eq (plist-get (funcall plumbing) :status) 'active)) 30))))))

;; The trigger test's skill: a save of tasks.org that changes an open task fires it.
(defconst org-agent-runs-test--on-save
  "#+SKILL_NAME: task-keeper
#+DESCRIPTION: Keeps tasks tidy after each save.
* Trigger
:PROPERTIES:
:ON: save
:MATCH: TODO=\"TODO\"
:PATHS: tasks.org
:END:
* Prompt
Close what the note says is done.
* Tests
** a changed open task in tasks.org fires :trigger:
:PROPERTIES:
:EVENT: save
:FILE: /notes/tasks.org
:EXPECT: fires
:END:
#+begin_example
,* TODO Call the plumber
#+end_example
** another file is quiet :trigger:
:PROPERTIES:
:EVENT: save
:FILE: /notes/journal.org
:EXPECT: quiet
:END:
#+begin_example
,* TODO Call the plumber
#+end_example
"
  "A skill triggered by saves of tasks.org.")

(ert-deftest org-agent-runs-a-matching-save-fires-the-skill-whose-edit-waits ()
  "A save the skill's trigger matches runs it, and its edit waits for approval.
A save it does not match runs nothing; approved, the edit is one undo step."
  (org-agent-runs-test--with-skill
    (let* ((file (expand-file-name "tasks.org" notes))
           (tasks (find-file-noselect file))
           (triggered nil)
           (org-agent-skill-triggered-functions
            (cons (lambda (e) (push (plist-get e :skill) triggered))
                  org-agent-skill-triggered-functions)))
      (add-hook 'after-save-hook #'org-agent--after-save)
      (unwind-protect
          (progn
            (with-temp-file (expand-file-name "task-keeper.skill.org" skills)
              (insert org-agent-runs-test--on-save))
            (org-agent-test-reload-skills)
            (should (eq (plist-get (seq-find (lambda (s) (equal (plist-get s :name) "task-keeper"))
                                             (org-agent-skills-list))
                                   :status)
                        'active))
            ;; A save of another note fires nothing.
            (with-current-buffer (find-file-noselect (expand-file-name "journal.org" notes))
              (goto-char (point-max))
              (insert "\nA quiet day.\n")
              (save-buffer))
            (org-agent-runs-test--propose-done "Call the plumber about the leak")
            (with-current-buffer tasks
              (goto-char (point-min))
              (re-search-forward "^\\*\\* TODO Call the plumber about the leak")
              (end-of-line)
              (insert "\nThe plumber came on Monday.")
              ;; As the command loop does after each command of the user's.
              (undo-boundary)
              (save-buffer))
            (should (org-agent-test-wait (lambda () finished) 60))
            ;; The shipped skills' save triggers fire too, but start nothing: only the
            ;; skills `org-agent-shipped-skill-triggers' names run.
            (should (equal (seq-filter #'org-agent-runs--may-fire-p triggered) '("task-keeper")))
            (pcase-let ((`(,name ,outcome) (car finished)))
              (should (equal name "task-keeper"))
              (should (eq (plist-get outcome :outcome) 'done))
              (should (= (length (plist-get outcome :queued)) 1)))
            (should (string-match-p
                     (regexp-quote (format "because of: a save of %s" file))
                     (format "%S" (car (org-agent-test-server-requests)))))
            ;; The edit the run proposed waits: the saved note is as the user left it.
            (let ((saved (with-current-buffer tasks (buffer-string)))
                  (p (car (org-agent-approvals-list))))
              (should (equal (plist-get p :skill) "task-keeper"))
              (should (equal (plist-get p :provenance) (format "a save of %s" file)))
              (should (string-match-p "^\\*\\* TODO Call the plumber"
                                      (with-current-buffer tasks (buffer-string))))
              (should (org-agent-test-wait
                       (lambda () (plist-get (car (org-agent-approvals-list)) :diff)) 10))
              (org-agent-approvals-approve (plist-get p :id))
              (with-current-buffer tasks
                (should (string-match-p "^\\*\\* DONE Call the plumber" (buffer-string)))
                (undo-boundary)
                (let ((last-command nil)) (undo))
                (should (equal (buffer-string) saved)))))
        (remove-hook 'after-save-hook #'org-agent--after-save)))))

(ert-deftest org-agent-runs-a-batch-of-proposals-is-queued-not-refused ()
  "A run proposing more edits than the refusals limit queues them all and ends well.
A queued proposal is not a refusal: the inbox or the gardener propose
batches the user takes item by item."
  (org-agent-runs-test--with-skill
    (let ((titles '("Renew the library card" "Call the plumber about the leak"
                    "Finish \"The Org Mode Manual\", chapter 8")))
      (dolist (title titles)
        (org-agent-test-server-push
         :text "" :calls `[("set_todo" ((id . ,(org-agent-runs-test--id title)) (state . "DONE")))])
        (org-agent-test-server-push
         :text "" :calls `[("schedule" ((id . ,(org-agent-runs-test--id title)) (date . "2026-12-01")))]))
      (org-agent-test-server-push :text "Six proposals wait for you.")
      (org-agent-skill-run "plumbing" "Tidy the tasks." "a test")
      (should (org-agent-test-wait (lambda () finished) 60))
      (let ((outcome (cadr (car finished))))
        (should (eq (plist-get outcome :outcome) 'done))
        (should (= (length (plist-get outcome :queued)) 6)))
      (should (= (length (org-agent-approvals-list)) 6)))))

(ert-deftest org-agent-runs-shipped-skills-fire-only-when-the-user-says-so ()
  "Shipped skills' triggers start runs only when named in the option; yours always."
  (let ((org-agent-skills--active '((:name "gardener" :source shipped)
                                    (:name "mine" :source user))))
    (let ((org-agent-shipped-skill-triggers nil))
      (should-not (org-agent-runs--may-fire-p "gardener"))
      (should (org-agent-runs--may-fire-p "mine")))
    (let ((org-agent-shipped-skill-triggers '("gardener")))
      (should (org-agent-runs--may-fire-p "gardener")))
    (let ((org-agent-shipped-skill-triggers t))
      (should (org-agent-runs--may-fire-p "gardener")))))

;;; org-agent-runs-test.el ends here
