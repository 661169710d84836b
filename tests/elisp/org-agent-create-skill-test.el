;;; org-agent-create-skill-test.el --- The agent drafts a skill, the user approves it -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module, actuator and chat buffer, against the
;; scripted test server: the model calls create_skill; a draft that
;; passes its own tests is shown in full, with their results, and asks;
;; approved, it is written to drafts/ and loads as an agent skill;
;; denied, nothing is written; a draft whose test fails goes back to
;; the model and the user is never asked.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)
(require 'cl-lib)

(defun org-agent-create-skill-test--reload ()
  "Load the skills again; return when the module reported them."
  (org-agent-test-reload-skills))

(defun org-agent-create-skill-test--named (name)
  "The skill NAME as `org-agent-skills-list' reports it, or nil."
  (cl-find-if (lambda (s) (equal (plist-get s :name) name)) (org-agent-skills-list)))

(defun org-agent-create-skill-test--tool-messages (n)
  "The `tool' messages of the Nth request the server received, out of their data blocks."
  (delq nil (mapcar (lambda (m) (and (equal (cdr (assoc "role" m)) "tool")
                                     (org-agent-test-unblock (cdr (assoc "content" m)))))
                    (cdr (assoc "messages" (nth n (org-agent-test-server-requests)))))))

(defmacro org-agent-create-skill-test--with-chat (&rest body)
  "Run BODY in a fresh chat, store and test server, with a skill directory of its own.
The user's skill directory is bound to `skills'; `finished' holds
\(CONVERSATION ANSWER) once a turn ends; `send' sends a message."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((skills (make-temp-file "org-agent-skills" t))
        (org-agent-skill-directories (list skills))
        (org-agent-chat-ask-in-batch t))
     (unwind-protect
         (progn
           (org-agent-create-skill-test--reload)
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (delete-directory skills t)
       ;; The other tests' skills: the shipped ones alone again.
       (let ((org-agent-skill-directories (list (make-temp-file "org-agent-skills" t))))
         (org-agent-create-skill-test--reload)
         (delete-directory (car org-agent-skill-directories) t)))))

(ert-deftest org-agent-create-skill-asks-and-writes-a-draft ()
  "`create_skill' asks, showing the draft in full and its tests' results; approved,
the draft is written under drafts/ and is active as an agent skill."
  (org-agent-create-skill-test--with-chat
    (let* ((text (org-agent-test-skill-draft "closed-projects"))
           (file (expand-file-name "drafts/closed-projects/SKILL.org" skills)))
      (org-agent-test-server-push
       :text "" :calls `[("create_skill" ((name . "closed-projects") (text . ,text)))])
      (org-agent-test-server-push :text "It is drafted.")
      (funcall send "Keep my closed projects closed.")
      (should (org-agent-test-wait (lambda () org-agent-chat--question) 60))
      (let ((shown (buffer-string)))
        ;; Why it asks, each reason on a line: the tests' results among them.
        (dolist (reason '("create-skill edits an Org file"
                          "create-skill adds the skill closed-projects: each new skill is approved on its own"
                          "its own tests pass: 1 :gate: (\"a done project cannot be reopened\")"))
          (should (string-match-p (concat "^\\*\\* Approve\\? create_skill\n\\(?:- .*\n\\)*- "
                                          (regexp-quote reason) "\n")
                                  shown)))
        (should (string-match-p
                 (concat "^\\*\\* Approve\\? create_skill\n"
                         "\\(?:- .*\n\\)*"
                         "- the new skill closed-projects, in full:\n"
                         "#\\+begin_src diff\n"
                         "--- /dev/null\n"
                         "\\+\\+\\+ " (regexp-quote file) "\n"
                         "@@ -0,0 \\+1,19 @@\n"
                         "\\+#\\+SKILL_NAME: closed-projects\n")
                 shown))
        ;; Every line of the draft is there, as it will be written.
        (dolist (line (split-string (string-trim-right text) "\n"))
          (should (string-search (concat "\n+" line "\n") shown)))
        (should (string-match-p "^\\[y\\] approve  \\[n\\] deny  (each new skill is approved on its own)$"
                                shown))
        (should-not (string-match-p "^- arguments: " shown)))
      ;; Nothing is written before the user says yes.
      (should-not (file-exists-p file))
      (should (eq (key-binding "y") #'org-agent-chat-approve))
      (call-interactively (key-binding "y"))
      (should (org-agent-test-wait (lambda () finished) 60))
      (should (equal (cadr finished) "It is drafted."))
      (should (string-match-p "^\\*\\* Tool: create_skill (ask: approved)" (buffer-string)))
      (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) text))
      (should (string-match-p
               (concat "\\`(:status :ok :message \"create-skill done\" :file \""
                       (regexp-quote file) "\")")
               (car (org-agent-create-skill-test--tool-messages 1))))
      ;; Loaded again by the actuator: active, as a skill of the agent's.
      (should (org-agent-test-wait
               (lambda () (eq (plist-get (org-agent-create-skill-test--named "closed-projects")
                                         :status)
                              'active))
               30))
      (let ((skill (org-agent-create-skill-test--named "closed-projects")))
        (should (eq (plist-get skill :source) 'agent))
        (should (file-equal-p (plist-get skill :file) file))
        (should (equal (plist-get skill :tests-passed) 1))))))

(ert-deftest org-agent-create-skill-each-draft-asks-and-a-denied-one-writes-nothing ()
  "Approving a draft with `a' approves it once: the next draft asks again; denied, it
is not written and the model learns why."
  (org-agent-create-skill-test--with-chat
    (org-agent-test-server-push
     :text "" :calls `[("create_skill" ((name . "closed-projects")
                                        (text . ,(org-agent-test-skill-draft
                                                  "closed-projects"))))])
    (org-agent-test-server-push
     :text "" :calls `[("create_skill" ((name . "closed-areas")
                                        (text . ,(org-agent-test-skill-draft
                                                  "closed-areas"))))])
    (org-agent-test-server-push :text "One of two.")
    (funcall send "Draft two skills.")
    (should (org-agent-test-wait (lambda () org-agent-chat--question) 60))
    (call-interactively (key-binding "a"))
    (should (string-match-p "^- /approved once: each new skill is approved on its own/"
                            (buffer-string)))
    ;; The second draft asks too, though the first was approved with `a'.
    (should (org-agent-test-wait
             (lambda () (and org-agent-chat--question
                             (string-search "- create-skill adds the skill closed-areas"
                                            (buffer-string))))
             60))
    (should (= (cl-count-if (lambda (line) (equal line "** Approve? create_skill"))
                            (split-string (buffer-string) "\n"))
               2))
    (call-interactively (key-binding "n"))
    (should (org-agent-test-wait (lambda () finished) 60))
    (should (equal (cadr finished) "One of two."))
    (should (file-exists-p (expand-file-name "drafts/closed-projects/SKILL.org" skills)))
    (should-not (file-exists-p (expand-file-name "drafts/closed-areas" skills)))
    (should (string-match-p "denied: the user denied it"
                            (cadr (org-agent-create-skill-test--tool-messages 2))))
    (should-not (org-agent-create-skill-test--named "closed-areas"))))

(ert-deftest org-agent-create-skill-a-failing-draft-goes-back-to-the-model-unasked ()
  "A draft whose own test fails is refused with the failure, and never asked about."
  (org-agent-create-skill-test--with-chat
    (let ((broken (replace-regexp-in-string
                   "state=TODO |" "state=NEXT |"
                   (org-agent-test-skill-draft "closed-projects") t t)))
      (org-agent-test-server-push
       :text "" :calls `[("create_skill" ((name . "closed-projects") (text . ,broken)))])
      (org-agent-test-server-push :text "My draft does not pass its test.")
      (funcall send "Keep my closed projects closed.")
      (should (org-agent-test-wait (lambda () finished) 60))
      (should-not (string-search "Approve? create_skill" (buffer-string)))
      (should (string-match-p "^\\*\\* Tool: create_skill (invalid)" (buffer-string)))
      (let ((result (car (org-agent-create-skill-test--tool-messages 1))))
        (should (string-search "the skill draft was not shown to the user" result))
        (should (string-search "drafts/closed-projects/SKILL.org:10: gate test" result))
        (should (string-search "expected deny, the rules decide allow" result)))
      (should-not (file-exists-p (expand-file-name "drafts" skills))))))

(provide 'org-agent-create-skill-test)
;;; org-agent-create-skill-test.el ends here
