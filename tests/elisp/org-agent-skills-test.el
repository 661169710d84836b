;;; org-agent-skills-test.el --- Skills loaded and reaching the request -*- lexical-binding: t; -*-

;;; Commentary:

;; Skill files in a skill directory, loaded by the module on a worker:
;; the active ones listed in the system prompt with the use_skill tool,
;; broken ones inactive with the file and line, a saved skill file
;; loaded again; the shipped skills always in use and never listed.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-runs)

(defconst org-agent-skills-test--review
  "#+SKILL_NAME: project-review
#+DESCRIPTION: Use for the weekly review of projects.
* Prompt
List stuck projects first.
* Gate
| action   | condition       | decision | reason                     |
|----------+-----------------+----------+----------------------------|
| set_todo | state=CANCELLED | deny     | the user cancels, not you  |
"
  "A skill with a prompt and a gate rule.")

(defun org-agent-skills-test--reload ()
  "Load the skills again and return the module's report."
  (org-agent-test-reload-skills))

(defun org-agent-skills-test--named (name)
  "The skill NAME as `org-agent-skills-list' reports it, or nil."
  (cl-find-if (lambda (s) (equal (plist-get s :name) name)) (org-agent-skills-list)))

(defun org-agent-skills-test--preview (&optional options)
  "Return the body of the request a chat turn with OPTIONS would send now."
  (let (preview)
    (puthash (org-agent--preview-request "skills-test" "Review my week"
                                         '(:url "http://127.0.0.1:9/v1" :model "m") options)
             (lambda (event) (setq preview event))
             org-agent--callbacks)
    (plist-get (org-agent-test-wait (lambda () preview) 30) :body)))

(ert-deftest org-agent-skills-load-and-reach-the-request ()
  "Active skills are listed in the prompt; a broken one says where it is broken."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (org-agent-skill-directories (list dir)))
      (unwind-protect
          (progn
            (with-temp-file (expand-file-name "project-review.skill.org" dir)
              (insert org-agent-skills-test--review))
            (with-temp-file (expand-file-name "broken.skill.org" dir)
              (insert "* Prompt\nno name\n"))
            (should (eq (plist-get (org-agent-skills-test--reload) :type) 'skills-loaded))
            (let ((skills (org-agent-skills-list)))
              (should (eq (plist-get (org-agent-skills-test--named "project-review") :status)
                          'active))
              (should (cl-find-if
                       (lambda (s)
                         (and (eq (plist-get s :status) 'failed)
                              (string-match-p "broken\\.skill\\.org:1: no #\\+SKILL_NAME"
                                              (plist-get s :reason))))
                       skills)))
            (with-current-buffer (progn (org-agent-skills) org-agent-skills-buffer-name)
              (goto-char (point-min))
              (should (search-forward "project-review" nil t))
              (should (search-forward "active" nil t))
              (should (search-forward "Use for the weekly review" nil t))
              (should (search-forward "no #+SKILL_NAME" nil t))
              (goto-char (point-min))
              (search-forward "project-review")
              (org-agent-skills-visit)
              (should (string-suffix-p "project-review.skill.org" buffer-file-name))
              (kill-buffer))
            (let ((body (org-agent-skills-test--preview)))
              (should (string-match-p "project-review: Use for the weekly review of projects"
                                      body))
              (should (string-match-p "\"use_skill\"" body))
              ;; The shipped skills are always in use: the base prompt is the agent
              ;; skill's, and neither is offered to the model to load.
              (should (string-match-p "You are org-agent, an assistant inside Emacs" body))
              (should-not (string-match-p "- agent: \\|- safety: " body))
              ;; The prompt itself loads only when the model asks for it.
              (should-not (string-match-p "List stuck projects first" body))))
        (delete-directory dir t)
        (org-agent-skills-test--reload)))))

(defconst org-agent-skills-test--tools
  "#+SKILL_NAME: words
#+DESCRIPTION: Use when the user asks how long a text is.
* Tools
** count
:PROPERTIES:
:TEXT: string the text
:END:
Count the words of a text.
#+begin_src emacs-lisp
;; The body of (lambda (text) ...).
(number-to-string (length (split-string text)))
#+end_src
** broken
:PROPERTIES:
:TEXT: string the text
:END:
A tool whose block does not read.
#+begin_src emacs-lisp
(length text
#+end_src
"
  "A user skill with an Elisp tool, and one whose block does not read.")

(ert-deftest org-agent-skills-elisp-tools-run-while-their-skill-is-in-use ()
  "A user skill's Elisp tool is offered while the skill is in use and runs as :call-tool.
A tool whose block does not read fails, saying why."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (org-agent-skill-directories (list dir))
           (call (lambda (name)
                   (org-agent-actuator-run
                    (list :type :request :target :emacs :action :call-tool :name name
                          :args '(:text "one two three"))))))
      (unwind-protect
          (progn
            (with-temp-file (expand-file-name "words.skill.org" dir)
              (insert org-agent-skills-test--tools))
            (org-agent-skills-test--reload)
            (should (eq (plist-get (org-agent-skills-test--named "words") :status) 'active))
            (should-not (string-match-p "words__count" (org-agent-skills-test--preview)))
            (let ((body (org-agent-skills-test--preview '(:skill "words"))))
              (should (string-match-p "\"name\": \"words__count\"" body))
              (should (string-match-p "Count the words of a text" body)))
            (let ((ok (funcall call "words__count")))
              (should (eq (plist-get ok :status) :ok))
              (should (equal (plist-get ok :result) "3")))
            (let ((broken (funcall call "words__broken")))
              (should (eq (plist-get broken :status) :error))
              (should (string-match-p "tool words__broken does not read: a form is not closed"
                                      (plist-get broken :message)))))
        (delete-directory dir t)
        (org-agent-skills-test--reload)
        (should-not (gethash "words__count" org-agent-tools--skill-table))))))

(ert-deftest org-agent-skills-saving-a-skill-file-loads-it ()
  "Saving a skill file loads the skills again."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (org-agent-skill-directories (list dir))
           (file (expand-file-name "project-review/SKILL.org" dir)))
      (unwind-protect
          (progn
            (org-agent-skills-test--reload)
            (should-not (org-agent-skills-test--named "project-review"))
            (make-directory (file-name-directory file) t)
            (with-current-buffer (find-file-noselect file)
              (insert org-agent-skills-test--review)
              (save-buffer)
              (kill-buffer))
            (should (org-agent-test-wait
                     (lambda () (org-agent-skills-test--named "project-review"))
                     30)))
        (delete-directory dir t)
        (org-agent-skills-test--reload)))))

(ert-deftest org-agent-skills-the-shipped-ones-are-active ()
  "The package's skills load from its skills/ directory and pass their own tests."
  (org-agent-test-with-store
    (let ((org-agent-skill-directories (list (make-temp-file "org-agent-skills" t))))
      (unwind-protect
          (progn
            (should (eq (plist-get (org-agent-skills-test--reload) :type) 'skills-loaded))
            (dolist (name '("agent" "safety"))
              (let ((skill (org-agent-skills-test--named name)))
                (should (eq (plist-get skill :status) 'active))
                (should (file-equal-p (plist-get skill :file)
                                      (expand-file-name (concat "skills/" name "/SKILL.org")
                                                        org-agent-test-root)))))
            (should-not org-agent-skills--inactive))
        (delete-directory (car org-agent-skill-directories) t)))))

(ert-deftest org-agent-skills-drafts-load-as-the-agent-s-and-lose-to-the-user-s ()
  "Drafts of the agent (drafts/ in the first user directory) load last, with source agent.
A skill of the user's with the same name wins; a draft may run no Elisp."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (org-agent-skill-directories (list dir))
           (drafts (expand-file-name "drafts" dir))
           (draft (lambda (name extra)
                    (let ((file (expand-file-name (concat name "/SKILL.org") drafts)))
                      (make-directory (file-name-directory file) t)
                      (with-temp-file file
                        (insert "#+SKILL_NAME: " name "\n#+DESCRIPTION: A draft.\n"
                                "* Gate\n| action | condition | decision | reason |\n"
                                "| set_todo | state=CANCELLED | deny | not you |\n"
                                "* Tests\n** cancelling is denied :gate:\n:PROPERTIES:\n"
                                ":ACTION: set_todo\n:TARGET: Task\n:ARGS: state=CANCELLED\n"
                                ":EXPECT: deny\n:END:\n#+begin_example\n,* TODO Task\n"
                                "#+end_example\n" extra))
                      file))))
      (unwind-protect
          (progn
            (should (equal (car (last (org-agent-skills--directories)))
                           (cons drafts 'agent)))
            (let ((mine (funcall draft "no-cancel" "")))
              (funcall draft "project-review" "")
              (funcall draft "shouting" "* Tools\n** shout\n#+begin_src emacs-lisp\n(ding)\n#+end_src\n")
              (with-temp-file (expand-file-name "project-review.skill.org" dir)
                (insert org-agent-skills-test--review))
              (org-agent-skills-test--reload)
              (let ((skill (org-agent-skills-test--named "no-cancel")))
                (should (eq (plist-get skill :status) 'active))
                (should (eq (plist-get skill :source) 'agent))
                (should (file-equal-p (plist-get skill :file) mine))))
            (let ((review (org-agent-skills-test--named "project-review")))
              (should (eq (plist-get review :source) 'user)))
            (should (cl-find-if (lambda (s)
                                  (and (eq (plist-get s :status) 'failed)
                                       (string-match-p "drafts/project-review/SKILL.org: the skill project-review is already loaded"
                                                       (plist-get s :reason))))
                                (org-agent-skills-list)))
            (should (cl-find-if (lambda (s)
                                  (and (eq (plist-get s :status) 'failed)
                                       (string-match-p "only shipped and user skills may run Elisp"
                                                       (plist-get s :reason))))
                                (org-agent-skills-list))))
        (delete-directory dir t)
        (org-agent-skills-test--reload)))))

(defconst org-agent-skills-test--skill-md
  "---
name: pdf-tools
description: >-
  Extracts text from PDF files.
  Use when the user mentions PDFs.
allowed-tools: Read set_todo
---

# PDF tools

* Run pdftotext first.
"
  "An Agent Skills SKILL.md whose body has a line Org would read as a headline.")

(ert-deftest org-agent-skills-agent-skills-load-and-import ()
  "A SKILL.md folder loads as an imported skill; importing it writes a SKILL.org that loads."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (imports (make-temp-file "org-agent-agent-skills" t))
           (org-agent-skill-directories (list dir))
           (org-agent-skill-import-directories (list imports))
           (folder (expand-file-name "pdf-tools" imports))
           (broken (expand-file-name "broken" imports)))
      (unwind-protect
          (progn
            (make-directory (expand-file-name "references" folder) t)
            (make-directory broken)
            (with-temp-file (expand-file-name "SKILL.md" folder)
              (insert org-agent-skills-test--skill-md))
            (with-temp-file (expand-file-name "references/FORMS.md" folder)
              (insert "# Forms\n"))
            (with-temp-file (expand-file-name "SKILL.md" broken)
              (insert "---\nname: other\ndescription: d\n---\nBody\n"))
            ;; The user's directories, the shipped one, the import ones not already
            ;; listed as the user's, then the agent's drafts.
            (let ((org-agent-skill-import-directories (list (concat dir "/") imports)))
              (should (equal (org-agent-skills--directories)
                             (list (cons dir 'user)
                                   (cons (expand-file-name "skills" org-agent--source-directory)
                                         'shipped)
                                   (cons imports 'imported)
                                   (cons (expand-file-name "drafts" dir) 'agent)))))
            (org-agent-skills-test--reload)
            (let ((pdf (org-agent-skills-test--named "pdf-tools")))
              (should (eq (plist-get pdf :status) 'active))
              (should (eq (plist-get pdf :source) 'imported))
              (should (equal (plist-get pdf :description)
                             "Extracts text from PDF files. Use when the user mentions PDFs."))
              (should (equal (plist-get pdf :file) (expand-file-name "SKILL.md" folder))))
            (should (cl-find-if
                     (lambda (s)
                       (string-match-p "broken/SKILL.md:2: the name \"other\" is not its folder's"
                                       (or (plist-get s :reason) "")))
                     (org-agent-skills-list)))
            (let ((target (org-agent-import-skill folder)))
              (should (equal target (expand-file-name "pdf-tools/SKILL.org" dir)))
              (with-temp-buffer
                (insert-file-contents target)
                (should (search-forward "#+SKILL_NAME: pdf-tools\n" nil t))
                ;; The body verbatim, its headline-like line escaped as Org escapes it.
                (should (search-forward (concat "#+begin_src markdown\n# PDF tools\n\n"
                                                ",* Run pdftotext first.\n#+end_src\n")
                                        nil t))
                (should (search-forward "** FORMS.md :reference:" nil t))
                (should (re-search-forward "^| set_todo +| - +| ask +|" nil t))
                (should-not (re-search-forward "| allow +|" nil t)))
              (org-agent-skills-test--reload)
              (let ((pdf (org-agent-skills-test--named "pdf-tools")))
                (should (eq (plist-get pdf :status) 'active))
                (should (eq (plist-get pdf :source) 'user))
                (should (equal (plist-get pdf :file) target)))
              ;; The SKILL.md of the same name yields to the user's Org version, and says so.
              (should (cl-find-if
                       (lambda (s) (string-match-p "pdf-tools is already loaded"
                                                   (or (plist-get s :reason) "")))
                       (org-agent-skills-list)))
              (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) nil)))
                (should-error (org-agent-import-skill folder) :type 'user-error)))
            (let ((err (should-error (org-agent-import-skill broken) :type 'org-agent-error)))
              (should (string-match-p "broken/SKILL.md:2: " (cadr err))))
            (should-not (file-exists-p (expand-file-name "broken/SKILL.org" dir))))
        (delete-directory dir t)
        (delete-directory imports t)
        (org-agent-skills-test--reload)))))

(defun org-agent-skills-test--trigger-logged-p (name)
  "Non-nil when the module's log says skill NAME was triggered."
  (seq-find (lambda (entry)
              (and (equal (nth 2 entry) "trigger")
                   (string-prefix-p (concat name ": ") (nth 3 entry))))
            (org-agent--log-since 0)))

(ert-deftest org-agent-skills-shipped-triggers-that-are-off-say-so-and-fire-nothing ()
  "A shipped skill's save trigger is off until `org-agent-shipped-skill-triggers' names it.
The list says it is not enabled; a save it matches is neither a
trigger event nor a line of the log saying it was triggered.  Named,
it fires."
  (org-agent-test-with-store
    (let* ((notes (make-temp-file "org-agent-notes" t))
           (org-agent-directories (list notes))
           (org-agent-skill-directories (list (make-temp-file "org-agent-skills" t)))
           (file (expand-file-name "a.org" notes))
           (triggered nil)
           (org-agent-skill-triggered-functions
            (list (lambda (e) (push (plist-get e :skill) triggered))))
           (save (lambda (text)
                   (with-current-buffer (find-file-noselect file)
                     (goto-char (point-max))
                     (insert text)
                     (save-buffer)))))
      (add-hook 'after-save-hook #'org-agent--after-save)
      (unwind-protect
          (let ((org-agent-shipped-skill-triggers nil))
            (org-agent-skills-test--reload)
            (let ((sentinel (org-agent-skills-test--named "secret-sentinel")))
              (should (eq (plist-get sentinel :source) 'shipped))
              (should (equal (plist-get sentinel :triggers) '(model user save)))
              (should (equal (plist-get sentinel :triggers-off) '(save))))
            (with-current-buffer (org-agent-skills-test--list)
              (goto-char (point-min))
              (should (re-search-forward "^ *secret-sentinel .* model user save(off) " nil t))
              (should (string-match-p "\\[save: not enabled, see org-agent-shipped-skill-triggers\\]"
                                      (buffer-substring (line-beginning-position)
                                                        (line-end-position)))))
            (funcall save "* TODO One\n")
            (org-agent-test-wait (lambda () (member "secret-sentinel" triggered)) 3)
            (should-not (member "secret-sentinel" triggered))
            (should-not (org-agent-skills-test--trigger-logged-p "secret-sentinel"))
            ;; Named, its trigger fires (and the list no longer says it is off).
            (let ((org-agent-shipped-skill-triggers '("secret-sentinel")))
              (should-not (plist-get (org-agent-skills-test--named "secret-sentinel")
                                     :triggers-off))
              (with-current-buffer (org-agent-skills-test--list)
                (goto-char (point-min))
                (should (re-search-forward "^ *secret-sentinel .* model user save " nil t))
                (should-not (string-match-p "not enabled"
                                            (buffer-substring (line-beginning-position)
                                                              (line-end-position)))))
              (funcall save "* TODO Two\n")
              (should (org-agent-test-wait (lambda () (member "secret-sentinel" triggered)) 10))
              (should (org-agent-skills-test--trigger-logged-p "secret-sentinel"))))
        (remove-hook 'after-save-hook #'org-agent--after-save)
        (when-let ((buffer (get-file-buffer file)))
          (with-current-buffer buffer (set-buffer-modified-p nil))
          (kill-buffer buffer))
        (when (get-buffer org-agent-skills-buffer-name)
          (kill-buffer org-agent-skills-buffer-name))
        (delete-directory notes t)
        (delete-directory (car org-agent-skill-directories) t)
        (org-agent-skills-test--reload)))))

(defun org-agent-skills-test--list ()
  "The buffer of `org-agent-skills', filled anew."
  (save-window-excursion (org-agent-skills))
  (get-buffer org-agent-skills-buffer-name))

(defun org-agent-skills-test--skill (name &optional depends gate-expect)
  "The text of a skill NAME depending on DEPENDS (a string).
With GATE-EXPECT, it has a gate row that denies and a test that
expects GATE-EXPECT of it."
  (concat (format "#+SKILL_NAME: %s\n#+DESCRIPTION: Use for %s.\n" name name)
          (if depends (format "#+DEPENDS_ON: %s\n" depends) "")
          "* Prompt\nBe careful.\n"
          (if gate-expect
              (concat "* Gate\n| action | condition | decision | reason |\n"
                      "| set_todo | state=DONE | deny | not yet |\n"
                      "* Tests\n** closing :gate:\n:PROPERTIES:\n:ACTION: set_todo\n"
                      ":TARGET: T\n:ARGS: state=DONE\n:EXPECT: " gate-expect "\n:END:\n"
                      "#+begin_example\n,* TODO T\n#+end_example\n")
            "")))

(ert-deftest org-agent-skills-every-listed-skill-has-its-file-and-its-name ()
  "A skill kept out by its dependencies or its tests is listed by name, with its file.
RET opens the file of each: a missing dependency, a cycle, a test
that fails, a file that names no skill, a skill the user disabled."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-skills" t))
           (org-agent-skill-directories (list dir))
           (org-agent-disabled-skills '("quiet"))
           (files `(("orphan" . ,(expand-file-name "orphan/SKILL.org" dir))
                    ("ping" . ,(expand-file-name "ping.skill.org" dir))
                    ("pong" . ,(expand-file-name "pong/SKILL.org" dir))
                    ("strict" . ,(expand-file-name "strict.skill.org" dir))
                    ("quiet" . ,(expand-file-name "quiet.skill.org" dir))
                    ("nameless" . ,(expand-file-name "nameless/SKILL.org" dir)))))
      (unwind-protect
          (progn
            (pcase-dolist (`(,file . ,text)
                           `((,(alist-get "orphan" files nil nil #'equal)
                              . ,(org-agent-skills-test--skill "orphan" "nowhere"))
                             (,(alist-get "ping" files nil nil #'equal)
                              . ,(org-agent-skills-test--skill "ping" "pong"))
                             (,(alist-get "pong" files nil nil #'equal)
                              . ,(org-agent-skills-test--skill "pong" "ping"))
                             (,(alist-get "strict" files nil nil #'equal)
                              . ,(org-agent-skills-test--skill "strict" nil "ask"))
                             (,(alist-get "quiet" files nil nil #'equal)
                              . ,(org-agent-skills-test--skill "quiet"))
                             (,(alist-get "nameless" files nil nil #'equal)
                              . "* Prompt\nno name\n")))
              (make-directory (file-name-directory file) t)
              (with-temp-file file (insert text)))
            (org-agent-skills-test--reload)
            (pcase-dolist (`(,name . ,file) files)
              (let ((skill (org-agent-skills-test--named name)))
                (should skill)
                (should (memq (plist-get skill :status) '(failed disabled)))
                (should (equal (plist-get skill :file) file))))
            (should (string-match-p "nowhere, which is not loaded"
                                    (plist-get (org-agent-skills-test--named "orphan") :reason)))
            (should (string-match-p "expected ask, the rules decide deny"
                                    (plist-get (org-agent-skills-test--named "strict") :reason)))
            (should (eq (plist-get (org-agent-skills-test--named "quiet") :status) 'disabled))
            ;; No row is named by its file's path.
            (should-not (seq-find (lambda (s) (string-prefix-p "/" (plist-get s :name)))
                                  (org-agent-skills-list)))
            (with-current-buffer (org-agent-skills-test--list)
              (pcase-dolist (`(,name . ,file) files)
                (goto-char (point-min))
                (should (re-search-forward (concat "^ *" (regexp-quote name) " ") nil t))
                (save-window-excursion
                  (org-agent-skills-visit)
                  (should (equal buffer-file-name file))
                  (kill-buffer)))))
        (delete-directory dir t)
        (org-agent-skills-test--reload)))))

;;; org-agent-skills-test.el ends here
