;;; org-agent-here-test.el --- The agent in any buffer, end to end -*- lexical-binding: t; -*-

;;; Commentary:

;; `org-agent-here-ask' and `org-agent-here-rewrite' in real Emacs with
;; the real module, against the scripted test server: answers streamed
;; into a child heading or at point (one undo step, text typed
;; elsewhere left alone, interrupted, the buffer killed or made
;; read-only meanwhile), and rewrites accepted, rejected, asked again
;; and refused when the region changed.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-here)
(require 'cl-lib)

(defmacro org-agent-here-test--in-buffer (mode text &rest body)
  "Run BODY in a fresh buffer in MODE holding TEXT, point at its start.
Undo is on, with a boundary after TEXT."
  (declare (indent 2) (debug t))
  `(let ((buffer (generate-new-buffer "org-agent-here-test")))
     (unwind-protect
         (with-current-buffer buffer
           (,mode)
           (buffer-enable-undo)
           (insert ,text)
           (undo-boundary)
           (goto-char (point-min))
           ,@body)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer (set-buffer-modified-p nil))
         (kill-buffer buffer)))))

(defun org-agent-here-test--settle (job &optional seconds)
  "Wait up to SECONDS (default 30) for JOB to end; return its state."
  (org-agent-test-wait (lambda () (not (eq (org-agent-here--job-state job) 'running)))
                       (or seconds 30))
  (org-agent-here--job-state job))

(defun org-agent-here-test--last-user-text ()
  "The text of the last user message the test server received."
  (let* ((body (car (last (org-agent-test-server-requests))))
         (users (seq-filter (lambda (m) (equal (cdr (assoc "role" m)) "user"))
                            (cdr (assoc "messages" body)))))
    (cdr (assoc "content" (car (last users))))))

(defun org-agent-here-test--outline ()
  "The headlines of the current Org buffer as (LEVEL TITLE), in order."
  (let (out)
    (org-map-entries (lambda () (push (list (org-outline-level)
                                             (org-get-heading t t t t))
                                       out)))
    (nreverse out)))

(defun org-agent-here-test--undo ()
  "Undo the last undo step, as \\[undo] does after a command."
  (undo-boundary)
  (let ((last-command nil)) (undo)))

;;;; Answers

(ert-deftest org-agent-here-answer-goes-into-a-child-heading ()
  "The answer becomes a child of the heading at point, with its model, as one undo step.
Headlines in the answer are demoted below the child, so the outline keeps its shape."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer org-mode
        "* Project\nSome text.\n** Old child\nBody.\n* Next\nTail.\n"
      (let ((before (buffer-string)))
        (forward-line 1)
        (org-agent-test-server-push
         :text "\nFirst line.\n* A heading of the model\nMore.\n** Deeper\nEnd." :drip_ms 5)
        (let ((job (org-agent-here-ask "What next for this project?" 'child)))
          (should (eq (org-agent-here-test--settle job) 'done))
          (should (equal (buffer-string)
                         (concat "* Project\nSome text.\n** Old child\nBody.\n"
                                 "** What next for this project?\n:PROPERTIES:\n"
                                 ":ORG_AGENT_MODEL: test (test)\n:END:\n"
                                 "First line.\n*** A heading of the model\nMore.\n"
                                 "**** Deeper\nEnd.\n"
                                 "* Next\nTail.\n")))
          (should (equal (org-agent-here-test--outline)
                         '((1 "Project") (2 "Old child") (2 "What next for this project?")
                           (3 "A heading of the model") (4 "Deeper") (1 "Next"))))
          (goto-char (point-min))
          (search-forward "What next")
          (should (equal (org-entry-get nil "ORG_AGENT_MODEL") "test (test)"))
          ;; The question went with an instruction to write Org.
          (should (string-match-p "\\`What next for this project\\?" (org-agent-here-test--last-user-text)))
          (should (string-search "Org markup" (org-agent-here-test--last-user-text)))
          ;; One undo step takes it all away.
          (org-agent-here-test--undo)
          (should (equal (buffer-string) before)))))))

(ert-deftest org-agent-here-a-follow-up-carries-its-branch-only ()
  "Asked under an earlier answer, the question goes with the path down to it.
Siblings are other branches: left out; so are private subtrees."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer org-mode
        (concat "* Router plans\nTOP-MARK\n"
                "** Which router?\n:PROPERTIES:\n:ORG_AGENT_MODEL: test (test)\n:END:\n"
                "BRANCH-MARK the quiet one.\n"
                "*** Aside :private:\nPRIVATE-MARK\n"
                "** Which cable?\n:PROPERTIES:\n:ORG_AGENT_MODEL: test (test)\n:END:\n"
                "SIBLING-MARK cat 6.\n")
      (search-forward "Which router?")
      (org-agent-test-server-push :text "It costs 80.")
      (let ((job (org-agent-here-ask "How much is it?" 'child)))
        (should (eq (org-agent-here-test--settle job) 'done))
        (let ((sent (org-agent-here-test--last-user-text)))
          (should (string-search "-----BEGIN CONVERSATION-----\n* Router plans\nTOP-MARK\n** Which router?" sent))
          (should (string-search "BRANCH-MARK" sent))
          (should-not (string-search "SIBLING-MARK" sent))
          (should-not (string-search "PRIVATE-MARK" sent))
          (should (string-match-p "-----END CONVERSATION-----\n\nHow much is it\\?" sent))))
      ;; Outside a conversation (no answer on the path), nothing goes with the question.
      (goto-char (point-max))
      (insert "* Shopping\nMILK-MARK\n")
      (org-agent-test-server-push :text "Eggs.")
      (let ((job (org-agent-here-ask "What else?" 'child)))
        (should (eq (org-agent-here-test--settle job) 'done))
        (should-not (string-search "CONVERSATION" (org-agent-here-test--last-user-text)))))))

(ert-deftest org-agent-here-failover-drops-the-failed-text-and-names-the-next-model ()
  "When a backend fails mid-stream, its text goes and the child names the backend that answered."
  (org-agent-test-with-server ()
    (setq org-agent-backends
          (list (list :name "first" :url (format "http://127.0.0.1:%d/v1" port)
                      :model "m1" :key "sk-test" :idle-timeout 2)
                (list :name "second" :url (format "http://127.0.0.1:%d/v1" port)
                      :model "m2" :key "sk-test" :idle-timeout 2)))
    (org-agent-here-test--in-buffer org-mode "* Topic\n"
      (org-agent-test-server-push :text "Broken words that never end because the stream is cut"
                                  :cut_at 700 :drip_ms 5)
      (org-agent-test-server-push :text "Good answer.")
      (let* ((seen nil)
             (job (progn
                    (add-hook 'after-change-functions
                              (lambda (&rest _)
                                (when (string-search "Broken" (buffer-string)) (setq seen t)))
                              nil t)
                    (org-agent-here-ask "Tell me" 'child))))
        (should (eq (org-agent-here-test--settle job) 'done))
        ;; The first backend's text was shown, then dropped.
        (should seen)
        (should (equal (buffer-string)
                       (concat "* Topic\n** Tell me\n:PROPERTIES:\n:ORG_AGENT_MODEL: second (m2)\n"
                               ":END:\nGood answer.\n")))))))

(ert-deftest org-agent-here-an-edit-the-model-asks-for-is-denied ()
  "An answer in place edits nothing through tools: an edit it asks for is denied, the model told."
  (org-agent-test-with-server
      ((notes (make-temp-file "org-agent-here-notes" t))
       (org-agent-directories (list notes))
       (org-agent-chat-ask-in-batch t))
    (unwind-protect
        (let* ((file (expand-file-name "tasks.org" notes))
               (_ (with-temp-file file (insert "* TODO Call the plumber\n")))
               (_ (org-agent-ingest-file file))
               (id (plist-get (car (org-agent-query :type 'headline)) :id)))
          (should id)
          (org-agent-here-test--in-buffer text-mode ""
            (org-agent-test-server-push :text "" :calls `[("set_todo" ((id . ,id) (state . "DONE")))])
            (org-agent-test-server-push :text "I could not mark it done.")
            (let ((job (org-agent-here-ask "Mark the plumber task done" 'point)))
              (should (eq (org-agent-here-test--settle job) 'done))
              (should (equal (buffer-string) "I could not mark it done."))))
          (with-temp-buffer
            (insert-file-contents file)
            (should (equal (buffer-string) "* TODO Call the plumber\n")))
          ;; The model was told the edit was denied.
          (let* ((body (nth 1 (org-agent-test-server-requests)))
                 (tool (seq-find (lambda (m) (equal (cdr (assoc "role" m)) "tool"))
                                 (cdr (assoc "messages" body)))))
            (should (string-match-p "den" (cdr (assoc "content" tool))))))
      (org-agent-test-kill-file-buffers notes)
      (delete-directory notes t))))

(ert-deftest org-agent-here-auto-place-is-child-in-org-and-point-elsewhere ()
  "`auto' answers under a child heading in Org, at point in other buffers."
  (org-agent-test-with-server ()
    (let ((org-agent-here-answer-place 'auto))
      (org-agent-here-test--in-buffer org-mode "* Heading\n"
        (should (eq (org-agent-here--place nil) 'child)))
      (org-agent-here-test--in-buffer org-mode "Before any heading.\n"
        (should (eq (org-agent-here--place nil) 'point)))
      (org-agent-here-test--in-buffer text-mode "Prose.\n"
        (should (eq (org-agent-here--place nil) 'point))
        (setq buffer-read-only t)
        (should (eq (org-agent-here--place nil) 'chat))))))

(ert-deftest org-agent-here-answer-at-point-in-a-plain-buffer ()
  "In a non-Org buffer the answer goes at point, as it is; the region goes with the question."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer text-mode "alpha beta\ngamma\n"
      (transient-mark-mode 1)
      (set-mark (point))
      (goto-char 6)                     ; the region is "alpha"
      (activate-mark)
      (org-agent-test-server-push :text "  * a line with a star\nsecond" :drip_ms 5)
      (let ((job (org-agent-here-ask "Explain" 'point)))
        (should (eq (org-agent-here-test--settle job) 'done))
        ;; After the region; leading space dropped; nothing demoted outside Org.
        (should (equal (buffer-string) "alpha* a line with a star\nsecond beta\ngamma\n"))
        ;; The user's point stayed where it was.
        (should (= (point) 6))
        (let ((sent (org-agent-here-test--last-user-text)))
          (should (string-search "-----BEGIN SELECTION-----\nalpha\n-----END SELECTION-----" sent))
          (should (string-search "inserted as it is" sent)))
        (org-agent-here-test--undo)
        (should (equal (buffer-string) "alpha beta\ngamma\n"))))))

(ert-deftest org-agent-here-text-typed-meanwhile-is-left-alone ()
  "Text typed before the answer's region while it streams stays as typed, outside it."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer text-mode "Intro\n"
      (goto-char (point-max))
      (org-agent-test-server-push :tokens 40 :text "word " :drip_ms 20)
      (let ((job (org-agent-here-ask "Talk" 'point)))
        (should (org-agent-test-wait (lambda () (string-search "word word" (buffer-string))) 30))
        (should (eq (org-agent-here--job-state job) 'running))
        ;; At the very start of the buffer, and right at the region's start.
        (save-excursion (goto-char (point-min)) (insert "TYPED "))
        (save-excursion (goto-char (org-agent-here--job-start job)) (insert "MORE\n"))
        (should (eq (org-agent-here-test--settle job) 'done))
        (should (equal (buffer-string)
                       (concat "TYPED Intro\nMORE\n" (mapconcat #'identity (make-list 40 "word") " ") " ")))))))

(ert-deftest org-agent-here-stop-interrupts-the-answer ()
  "`org-agent-here-stop' and `org-agent-interrupt' stop an answer: what came stays, with a note."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer org-mode "* Task\n* Other\n"
      (dolist (stop (list #'org-agent-here-stop #'org-agent-interrupt))
        (goto-char (point-min))
        (org-agent-test-server-push :tokens 500 :text "word " :drip_ms 20)
        (let ((job (org-agent-here-ask "Talk for a while" 'child)))
          (should (org-agent-test-wait (lambda () (string-search "word word" (buffer-string))) 30))
          (funcall stop)
          (should (eq (org-agent-here-test--settle job 10) 'interrupted))
          (should (string-search "[org-agent: interrupted]\n* Other" (buffer-string)))
          (should (< (how-many "word" (point-min) (point-max)) 1000))
          (should-not (gethash (org-agent-here--job-request job) org-agent-here--jobs))))
      ;; The outline held: two children under Task, Other after them.
      (should (equal (mapcar #'car (org-agent-here-test--outline)) '(1 2 2 1))))))

(ert-deftest org-agent-here-killed-or-read-only-buffer-mid-stream ()
  "Killing the buffer, or making it read-only, while the answer streams stops it cleanly."
  (org-agent-test-with-server ()
    (let ((errors nil))
      (cl-letf* ((orig-message (symbol-function 'message))
                 ((symbol-function 'message)
                  (lambda (fmt &rest args)
                    (let ((text (apply #'format fmt args)))
                      (when (string-match-p "error handling" text) (push text errors))
                      (apply orig-message fmt args)))))
        ;; Killed.
        (let (job)
          (org-agent-here-test--in-buffer text-mode "Start\n"
            (goto-char (point-max))
            (org-agent-test-server-push :tokens 500 :text "word " :drip_ms 20)
            (setq job (org-agent-here-ask "Talk" 'point))
            (should (org-agent-test-wait (lambda () (string-search "word word" (buffer-string))) 30)))
          ;; The buffer is gone now (killed by the macro).
          (should (eq (org-agent-here--job-state job) 'stopped))
          (should-not (gethash (org-agent-here--job-request job) org-agent-here--jobs))
          (accept-process-output nil 0.3))
        ;; Read-only.
        (org-agent-here-test--in-buffer text-mode "Start\n"
          (goto-char (point-max))
          (org-agent-test-server-push :tokens 500 :text "word " :drip_ms 20)
          (let ((job (org-agent-here-ask "Talk" 'point)))
            (should (org-agent-test-wait (lambda () (string-search "word word" (buffer-string))) 30))
            (setq buffer-read-only t)
            (let ((so-far (buffer-string)))
              (should (eq (org-agent-here-test--settle job 10) 'stopped))
              (should (string-prefix-p so-far (buffer-string))))))
        ;; And the next answer comes as usual.
        (org-agent-here-test--in-buffer text-mode ""
          (org-agent-test-server-push :text "fine")
          (let ((job (org-agent-here-ask "Still there?" 'point)))
            (should (eq (org-agent-here-test--settle job) 'done))
            (should (equal (buffer-string) "fine")))))
      (should-not errors))))

(ert-deftest org-agent-here-read-only-buffer-answers-in-the-chat ()
  "In a read-only buffer the answer comes in the chat."
  (org-agent-test-with-server ()
    (org-agent-test-kill-chat)
    (unwind-protect
        (org-agent-here-test--in-buffer text-mode "Read me.\n"
          (setq buffer-read-only t)
          (org-agent-test-server-push :text "In the chat.")
          (org-agent-here-ask "Where does this go?" 'point)
          (should (org-agent-test-wait (lambda () finished) 30))
          (should (equal (cadr finished) "In the chat."))
          (should (equal (buffer-string) "Read me.\n")))
      (org-agent-test-kill-chat))))

(ert-deftest org-agent-here-shape-holds-back-a-line-of-stars ()
  "A line of only stars waits for the rest of its line before it is demoted or not."
  (let ((job (org-agent-here--job-create :prefix "**" :at-bol t :started t)))
    (should (equal (org-agent-here--shape job "Line\n*" nil) "Line\n"))
    (should (equal (org-agent-here--shape job "* head\n*bold* text\n" nil)
                   "**** head\n*bold* text\n"))
    (should (equal (org-agent-here--shape job "mid *\n" nil) "mid *\n"))
    (should (equal (org-agent-here--shape job "**" nil) ""))
    (should (equal (org-agent-here--shape job "" t) "****"))))

(ert-deftest org-agent-here-shape-hands-back-a-plain-piece-itself ()
  "A piece with no line starting with a star is the string itself, not a copy.
Every piece of an answer passes here, ten times a second."
  (let ((job (org-agent-here--job-create :prefix "**" :at-bol t :started t :pending ""))
        (piece "word word\nmore words "))
    (should (eq (org-agent-here--shape job piece nil) piece))
    (should-not (org-agent-here--job-at-bol job))
    (should (equal (org-agent-here--shape job "* mid-line\n* head" nil)
                   "* mid-line\n*** head"))))

(ert-deftest org-agent-here-point-after-the-answer-stays-on-its-text ()
  "Point after the answer's end stays on the same text while the answer grows."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer text-mode "Intro\nOutro\n"
      (goto-char 6)                     ; the end of "Intro"
      (org-agent-test-server-push :tokens 40 :text "word " :drip_ms 20)
      (let ((job (org-agent-here-ask "Talk" 'point)))
        (should (org-agent-test-wait (lambda () (string-search "word word" (buffer-string))) 30))
        (search-forward "Outro")
        (should (eq (org-agent-here-test--settle job) 'done))
        (should (equal (buffer-substring (- (point) 5) (point)) "Outro"))
        (should (equal (buffer-string)
                       (concat "Intro" (mapconcat #'identity (make-list 40 "word") " ")
                               " \nOutro\n")))))))

;;;; Rewrites

(defconst org-agent-here-test--org
  "* Intro
Some text here.
* Tasks
:PROPERTIES:
:ID: abc
:END:
** TODO Write the report
#+begin_src emacs-lisp
(message \"hi\")
#+end_src
* After
Keep.
"
  "An Org buffer whose middle subtree is rewritten.")

(defun org-agent-here-test--select-tasks ()
  "Make the subtree \"Tasks\" the active region."
  (transient-mark-mode 1)
  (goto-char (point-min))
  (search-forward "* Tasks")
  (beginning-of-line)
  (set-mark (point))
  (search-forward "* After")
  (beginning-of-line)
  (activate-mark))

(defun org-agent-here-test--rewrite (instruction)
  "Rewrite the active region with INSTRUCTION; return the job once its proposal is in."
  (let ((job (org-agent-here-rewrite (region-beginning) (region-end) instruction)))
    (should (eq (org-agent-here-test--settle job) 'done))
    job))

(ert-deftest org-agent-here-rewrite-accept-keeps-the-org-structure ()
  "A rewrite shows a diff; accepting it replaces the region in one undo step."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer org-mode org-agent-here-test--org
      (org-agent-here-test--select-tasks)
      (org-agent-test-server-push
       :text "```org\n* Tasks\n:PROPERTIES:\n:ID: abc\n:END:\n** TODO Write the quarterly report\n#+begin_src emacs-lisp\n(message \"hello\")\n#+end_src\n```"
       :drip_ms 5)
      (let* ((job (org-agent-here-test--rewrite "Make it more precise"))
             (diff (org-agent-here--job-diff job))
             (proposal (org-agent-here--job-proposal job))
             (sent (org-agent-here-test--last-user-text)))
        ;; The request: the instruction, the text, only the replacement wanted, no tools.
        (should (string-search "Reply with the replacement text only" sent))
        (should (string-search "Instruction: Make it more precise" sent))
        (should (string-search "** TODO Write the report\n#+begin_src" sent))
        (should-not (assoc "tools" (car (last (org-agent-test-server-requests)))))
        ;; The proposal, its fence gone, and its diff.
        (should (equal (with-current-buffer proposal (buffer-string))
                       "* Tasks\n:PROPERTIES:\n:ID: abc\n:END:\n** TODO Write the quarterly report\n#+begin_src emacs-lisp\n(message \"hello\")\n#+end_src\n"))
        (with-current-buffer diff
          (should (derived-mode-p 'diff-mode))
          (should org-agent-here-rewrite-mode)
          (should (string-search "\n-** TODO Write the report\n" (buffer-string)))
          (should (string-search "\n+** TODO Write the quarterly report\n" (buffer-string)))
          (should-not (org-agent-here-rewrite-warnings))
          (should (eq (lookup-key org-agent-here-rewrite-mode-map (kbd "C-c C-c"))
                      #'org-agent-here-rewrite-accept))
          ;; Text typed outside the region meanwhile does not stop the rewrite.
          (with-current-buffer buffer (save-excursion (goto-char (point-min)) (insert "#+TITLE: t\n")))
          (org-agent-here-rewrite-accept))
        (should-not (buffer-live-p diff))
        (should-not (buffer-live-p proposal))
        (should (equal (org-agent-here-test--outline)
                       '((1 "Intro") (1 "Tasks") (2 "Write the quarterly report") (1 "After"))))
        (should (string-search ":ID: abc\n:END:\n** TODO Write the quarterly report\n#+begin_src emacs-lisp\n(message \"hello\")\n#+end_src\n* After\nKeep.\n"
                               (buffer-string)))
        (org-agent-here-test--undo)
        (should (equal (buffer-string) (concat "#+TITLE: t\n" org-agent-here-test--org)))))))

(ert-deftest org-agent-here-rewrite-that-loses-structure-is-flagged ()
  "A proposal that drops a headline is flagged, and accepted only when confirmed."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer org-mode org-agent-here-test--org
      (org-agent-here-test--select-tasks)
      (org-agent-test-server-push :text "* Tasks\nWrite the report.\n")
      (let* ((job (org-agent-here-test--rewrite "Flatten it"))
             (diff (org-agent-here--job-diff job)))
        (with-current-buffer diff
          (should (org-agent-here-rewrite-warnings))
          (should (string-match-p "headlines: 2 .* become 1" (car (org-agent-here-rewrite-warnings))))
          (should (string-search "# Warning: the Org structure changes" (buffer-string)))
          (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) nil)))
            (should-error (org-agent-here-rewrite-accept) :type 'user-error)))
        (should (equal (buffer-string) org-agent-here-test--org))
        (with-current-buffer diff
          (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
            (org-agent-here-rewrite-accept)))
        (should (equal (org-agent-here-test--outline) '((1 "Intro") (1 "Tasks") (1 "After"))))))))

(ert-deftest org-agent-here-rewrite-reject-leaves-the-region ()
  "Rejecting drops the proposal and its buffers; the buffer is as it was."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer text-mode "one two three\n"
      (transient-mark-mode 1)
      (set-mark 5) (goto-char 8) (activate-mark) ; "two"
      (org-agent-test-server-push :text "TWO")
      (let* ((job (org-agent-here-test--rewrite "Upper case"))
             (buffers (list (org-agent-here--job-diff job) (org-agent-here--job-proposal job))))
        (with-current-buffer (car buffers) (org-agent-here-rewrite-reject))
        (should-not (seq-some #'buffer-live-p buffers))
        (should (equal (buffer-string) "one two three\n"))))))

(ert-deftest org-agent-here-rewrite-again-sends-the-previous-proposal ()
  "A follow-up instruction goes with the previous proposal; the new one replaces it."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer prog-mode "(defun f (x)\n  (+ x 1))\n"
      (transient-mark-mode 1)
      (set-mark (point-min)) (goto-char (point-max)) (activate-mark)
      (org-agent-test-server-push :text "(defun f (x)\n  \"Add one.\"\n  (+ x 1))\n")
      (let ((job (org-agent-here-test--rewrite "Add a docstring")))
        (org-agent-test-server-push :text "```elisp\n(defun f (x)\n  \"Return X plus one.\"\n  (1+ x))\n```\n")
        (with-current-buffer (org-agent-here--job-diff job)
          (org-agent-here-rewrite-again "Use 1+ and say what it returns"))
        (should (eq (org-agent-here-test--settle job) 'done))
        (let ((sent (org-agent-here-test--last-user-text)))
          (should (string-search "Instruction: Use 1+ and say what it returns" sent))
          (should (string-search "-----BEGIN PROPOSAL-----\n(defun f (x)\n  \"Add one.\"" sent))
          (should (string-search "-----BEGIN TEXT-----\n(defun f (x)\n  (+ x 1))\n" sent)))
        (with-current-buffer (org-agent-here--job-proposal job)
          (org-agent-here-rewrite-accept))
        (should (equal (buffer-string) "(defun f (x)\n  \"Return X plus one.\"\n  (1+ x))\n"))))))

(ert-deftest org-agent-here-rewrite-refused-when-the-region-changed ()
  "Accepting is refused, clearly, when the region no longer holds the text sent."
  (org-agent-test-with-server ()
    (org-agent-here-test--in-buffer text-mode "keep this sentence\n"
      (transient-mark-mode 1)
      (set-mark (point-min)) (goto-char (point-max)) (activate-mark)
      (org-agent-test-server-push :text "a better sentence\n")
      (let ((job (org-agent-here-test--rewrite "Improve")))
        (goto-char 1) (delete-char 1) (insert "K")
        (with-current-buffer (org-agent-here--job-diff job)
          (should (string-match-p "region changed"
                                  (cadr (should-error (org-agent-here-rewrite-accept)
                                                      :type 'user-error)))))
        (should (equal (buffer-string) "Keep this sentence\n"))
        ;; The proposal is still there to reject.
        (should (buffer-live-p (org-agent-here--job-proposal job)))
        (with-current-buffer (org-agent-here--job-proposal job) (org-agent-here-rewrite-reject))))))

(ert-deftest org-agent-here-unfence-strips-one-fence-only ()
  "One fence around the whole proposal goes; inner fences and bare text stay."
  (should (equal (org-agent-here--unfence "```python\nx = 1\n```" "y = 2\n") "x = 1\n"))
  (should (equal (org-agent-here--unfence "```\nx = 1\n```\n" "y = 2") "x = 1"))
  (should (equal (org-agent-here--unfence "```a\nx\n```\ntext\n```b\ny\n```" "z\n")
                 "```a\nx\n```\ntext\n```b\ny\n```\n"))
  (should (equal (org-agent-here--unfence "plain" "orig\n") "plain\n")))

;;;; Commands

(ert-deftest org-agent-here-m-x-offers-the-commands-for-any-buffer ()
  "M-x offers asking, rewriting and stopping anywhere; a rewrite's keys only on it."
  (let ((offered (lambda (buffer)
                   (let (names)
                     (mapatoms
                      (lambda (s)
                        (when (and (commandp s)
                                   (equal (file-name-base (or (symbol-file s 'defun) ""))
                                          "org-agent-here")
                                   (command-completion-default-include-p s buffer))
                          (push s names))))
                     (sort names #'string<)))))
    (with-temp-buffer
      (should (equal (funcall offered (current-buffer))
                     '(org-agent-here-ask org-agent-here-rewrite org-agent-here-stop)))
      (org-agent-here-rewrite-mode 1)
      (should (memq 'org-agent-here-rewrite-accept (funcall offered (current-buffer)))))
    ;; Each is autoloaded.
    (let ((source (with-temp-buffer
                    (insert-file-contents (expand-file-name "elisp/org-agent-here.el"
                                                            org-agent-test-root))
                    (buffer-string))))
      (dolist (command '(org-agent-here-ask org-agent-here-rewrite org-agent-here-stop))
        (should (string-search (format ";;;###autoload\n(defun %s " command) source))))))

(provide 'org-agent-here-test)
;;; org-agent-here-test.el ends here
