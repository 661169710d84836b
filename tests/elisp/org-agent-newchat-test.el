;;; org-agent-newchat-test.el --- Stopping, leaving and beginning chats -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat buffer, against the scripted
;; test server (and a stand-in for scripts/local-llm): C-g in the chat
;; interrupts a turn; killing the chat or Emacs with a turn running
;; asks, then stops it, and nothing stays "in flight"; a changed
;; `org-agent-local-model' restarts the local server; the first screen
;; says the keys and wraps its long lines; `org-agent-new-chat' saves
;; and begins anew; saved chats are listed distinctly; only user
;; commands are offered by M-x.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)
(require 'cl-lib)
(require 'org-agent-approvals)
(require 'org-agent-skills)
(require 'org-agent-scans)

(defmacro org-agent-newchat-test--with-chat (&rest body)
  "Run BODY in a fresh chat against a fresh test server queue and store.
`finished' holds (CONVERSATION ANSWER) once a turn ends; `send'
types a message and sends it."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((org-agent-test-idle-timeout 5))
     (unwind-protect
         (progn
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (org-agent-interrupt)
       (org-agent-test-wait (lambda () (not (org-agent-busy-p))) 10))))

(defun org-agent-newchat-test--slow-answer ()
  "Queue an answer that streams for about a minute."
  (org-agent-test-server-push :tokens 600 :text "word " :drip_ms 100))

(defun org-agent-newchat-test--streaming-p ()
  "Whether the answer of the current chat has begun to stream."
  (string-match-p "^\\* Assistant\n.*word" (buffer-string)))

(defun org-agent-newchat-test--module-turns ()
  "How many chat turns the module runs now (they are cancelled: use at the end)."
  (org-agent--chat-cancel-all))

;;;; A. C-g interrupts

(ert-deftest org-agent-newchat-c-g-interrupts-the-turn ()
  "C-g in the chat while the agent answers stops the turn; the header says how."
  (org-agent-newchat-test--with-chat
    (let ((idle-header (org-agent-chat--header))
          busy-header)
      (org-agent-newchat-test--slow-answer)
      (funcall send "Tell me a long story.")
      (should (org-agent-test-wait #'org-agent-newchat-test--streaming-p 30))
      (setq busy-header (org-agent-chat--header))
      ;; With an active region, C-g only deactivates it, as everywhere.
      (let ((transient-mark-mode t))
        (push-mark (point-min) t t)
        (condition-case nil (call-interactively (key-binding (kbd "C-g"))) (quit nil))
        (should-not (region-active-p)))
      (should-not finished)
      (should (org-agent-busy-p))
      (let ((command (key-binding (kbd "C-g"))))
        ;; keyboard-quit signals `quit' and leaves the turn running.
        (condition-case nil (call-interactively command) (quit nil)))
      (should (org-agent-test-wait (lambda () finished) 15))
      (should (null (cadr finished)))
      (should (string-match-p "^- /Interrupted: you stopped this turn\\./$" (buffer-string)))
      (should-not (org-agent-busy-p))
      ;; Idle, C-g quits as everywhere.
      (should (eq 'quit (condition-case nil
                            (progn (call-interactively (key-binding (kbd "C-g"))) 'no-quit)
                          (quit 'quit))))
      ;; The header line says how to send, and while the agent answers, how to stop it.
      (should (string-match-p "C-c C-c sends" idle-header))
      (should (string-match-p "C-g interrupts" busy-header)))))

;;;; B. Killing the chat or Emacs

(ert-deftest org-agent-newchat-killing-the-chat-stops-its-turn ()
  "Killing the chat with a turn running asks, then stops it; status says none runs."
  (org-agent-newchat-test--with-chat
    (org-agent-newchat-test--slow-answer)
    (funcall send "Tell me a long story.")
    (should (org-agent-test-wait #'org-agent-newchat-test--streaming-p 30))
    (let ((buffer (current-buffer))
          (asked nil))
      ;; Interactive: the user is asked, and saying no keeps the chat and its turn.
      (let ((noninteractive nil))
        (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) (setq asked t) nil)))
          (should-not (kill-buffer buffer))))
      (should asked)
      (should (buffer-live-p buffer))
      (should (org-agent-busy-p))
      (let ((noninteractive nil))
        (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t)))
          (should (kill-buffer buffer))))
      (should-not (buffer-live-p buffer))
      (should-not (org-agent-busy-p))
      (org-agent-status)
      (with-current-buffer "*org-agent-status*"
        (should (string-match-p "^- turn in flight :: no$" (buffer-string))))
      ;; The module stopped the turn too.
      (should (org-agent-test-wait
               (lambda () (zerop (org-agent-newchat-test--module-turns))) 10)))))

(ert-deftest org-agent-newchat-killing-the-chat-in-batch-does-not-ask ()
  "In batch Emacs nobody can answer: killing the chat stops its turn at once."
  (org-agent-newchat-test--with-chat
    (org-agent-newchat-test--slow-answer)
    (funcall send "Tell me a long story.")
    (should (org-agent-test-wait #'org-agent-newchat-test--streaming-p 30))
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) (error "Asked in batch"))))
      (should (kill-buffer (current-buffer))))
    (should-not (org-agent-busy-p))
    (should (org-agent-test-wait
             (lambda () (zerop (org-agent-newchat-test--module-turns))) 10))))

(ert-deftest org-agent-newchat-quitting-emacs-asks-then-stops-the-turn ()
  "Quitting Emacs with a turn running asks; yes stops the turn, no keeps Emacs."
  (org-agent-newchat-test--with-chat
    (org-agent-newchat-test--slow-answer)
    (funcall send "Tell me a long story.")
    (should (org-agent-test-wait #'org-agent-newchat-test--streaming-p 30))
    (let ((noninteractive nil))
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) nil))
                ((symbol-function 'yes-or-no-p) (lambda (&rest _) nil)))
        (should-not (run-hook-with-args-until-failure 'kill-emacs-query-functions)))
      (should (org-agent-busy-p))
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t))
                ((symbol-function 'yes-or-no-p) (lambda (&rest _) t)))
        (should (run-hook-with-args-until-failure 'kill-emacs-query-functions))))
    (should (org-agent-test-wait (lambda () finished) 15))
    (should (null (cadr finished)))
    (should-not (org-agent-busy-p))))

;;;; C. The local model follows its option

(defun org-agent-newchat-test--fake-local-llm ()
  "A directory with a scripts/local-llm that says ready and serves nothing."
  (let* ((dir (make-temp-file "org-agent-fake-src" t))
         (script (expand-file-name "scripts/local-llm" dir)))
    (make-directory (file-name-directory script) t)
    (with-temp-file script
      (insert "#!/bin/sh\necho ready\nexec sleep 600\n"))
    (set-file-modes script #o755)
    dir))

(ert-deftest org-agent-newchat-a-local-model-that-does-not-start-says-why-in-the-chat ()
  "The server's last words show in the chat, not only in a hidden buffer."
  (let* ((dir (make-temp-file "org-agent-fake-src" t))
         (script (expand-file-name "scripts/local-llm" dir))
         (org-agent--source-directory dir)
         (org-agent-backends nil)
         (org-agent-local-model 'qwen))
    (make-directory (file-name-directory script) t)
    (with-temp-file script
      (insert "#!/bin/sh\necho 'FileNotFoundError: qwen2.5-bare-json-tools.jinja' >&2\nexit 1\n"))
    (set-file-modes script #o755)
    (unwind-protect
        (progn
          (org-agent-test-kill-chat)
          (with-current-buffer (org-agent-chat)
            (insert "Hello?")
            (org-agent-chat-send)
            (should (org-agent-test-wait
                     (lambda () (equal org-agent-chat--state "idle: the local model did not start"))
                     30))
            (should (string-search "FileNotFoundError: qwen2.5-bare-json-tools.jinja" (buffer-string)))
            ;; The message waits after the last "* You", to send again.
            (should (string-match-p "^\\* You\nHello\\?\\'" (buffer-string)))
            (set-buffer-modified-p nil)
            (kill-buffer)))
      (org-agent-backends--stop-local)
      (delete-directory dir t))))

(ert-deftest org-agent-newchat-a-new-local-model-restarts-its-server ()
  "Setting `org-agent-local-model' makes the next message start a server for it."
  (let* ((org-agent--source-directory (org-agent-newchat-test--fake-local-llm))
         (org-agent-backends nil)
         (org-agent-local-model 'qwen)
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer)))))
         (model-of-server (lambda ()
                            (let ((p (car org-agent-backends--local)))
                              (and (process-live-p p) (nth 2 (process-command p)))))))
    (unwind-protect
        (progn
          (org-agent-test-kill-chat)
          (with-current-buffer (org-agent-chat)
            (insert "Hello?")
            (org-agent-chat-send)
            ;; Nothing answers at the fake server's port: the turn ends with an error.
            (should (org-agent-test-wait (lambda () finished) 30))
            (should (equal (funcall model-of-server) "qwen"))
            (let ((old (car org-agent-backends--local)))
              (setq org-agent-local-model 'smollm2)
              (setq finished nil)
              (goto-char (point-max))
              (insert "Hello again?")
              (org-agent-chat-send)
              (should (org-agent-test-wait (lambda () finished) 30))
              (should (equal (funcall model-of-server) "smollm2"))
              (should-not (process-live-p old))
              (should (string-match-p "local smollm2" org-agent-chat--backend-name)))
            ;; Through Customize, the server for the old model stops at once.
            (customize-set-variable 'org-agent-local-model 'qwen)
            (should-not org-agent-backends--local)))
      (org-agent-backends--stop-local)
      (delete-directory org-agent--source-directory t))))

;;;; D. The first screen

(ert-deftest org-agent-newchat-the-first-screen-says-the-keys-and-wraps ()
  "The chat begins with how to send, interrupt, begin anew and get help, and wraps."
  (let ((org-agent-backends nil)
        (org-agent-local-model 'qwen))
    (org-agent-test-kill-chat)
    (with-current-buffer (org-agent-chat)
      (let ((intro (buffer-substring-no-properties
                    (point-min) (save-excursion (goto-char (point-min))
                                                (re-search-forward "^\\* You$")
                                                (point)))))
        (dolist (key '("C-c C-c" "C-g" "C-c C-k" "C-c C-n" "C-h m"))
          (should (string-search key intro)))
        ;; The configuration lines are longer than a window: they wrap, never cut.
        (should (string-search "(setq org-agent-backends" intro))
        (should (cl-some (lambda (line) (> (length line) 100)) (split-string intro "\n")))
        (should visual-line-mode)
        (should-not truncate-lines)
        (should word-wrap))
      (set-buffer-modified-p nil)
      (kill-buffer))))

;;;; E. A new chat, and the saved ones

(ert-deftest org-agent-newchat-begins-a-new-conversation ()
  "C-c C-n saves the conversation and begins one that sends nothing of it."
  (org-agent-newchat-test--with-chat
    (should (eq (key-binding (kbd "C-c C-n")) 'org-agent-new-chat))
    (org-agent-test-server-push :text "Hello to you.")
    (funcall send "Hello, remember the word pelican.")
    (should (org-agent-test-wait (lambda () finished) 30))
    (let ((old org-agent-chat--conversation))
      (call-interactively (key-binding (kbd "C-c C-n")))
      (should (derived-mode-p 'org-agent-chat-mode))
      (should-not (equal org-agent-chat--conversation old))
      (should-not (string-search "pelican" (buffer-string)))
      (should (string-match-p "\n\\* You\n\\'" (buffer-string)))
      ;; The old one is saved, to continue later.
      (with-temp-buffer
        (insert-file-contents (expand-file-name (concat old ".org") (org-agent-chat--directory)))
        (should (string-search "pelican" (buffer-string))))
      (org-agent-test-server-push :text "A second answer.")
      (funcall send "Which word did I say?")
      (should (org-agent-test-wait (lambda () finished) 30))
      (let ((last (car (last (org-agent-test-server-requests)))))
        (should (string-search "Which word did I say?" (format "%S" last)))
        (should-not (string-search "pelican" (format "%S" last)))))))

(ert-deftest org-agent-newchat-saved-chats-are-listed-distinctly ()
  "Each saved chat is listed with its date and first words, and no two alike."
  (let* ((org-agent-state-directory (make-temp-file "org-agent-saved" t))
         (dir (org-agent-chat--directory))
         (files nil))
    (unwind-protect
        (progn
          (make-directory dir t)
          (dolist (id '("chat-20261126T101500-1" "chat-20261126T101500-2"
                        "chat-20261125T090000-3"))
            (let ((file (expand-file-name (concat id ".org") dir)))
              (with-temp-file file
                (insert "#+TITLE: org-agent chat\n#+CONVERSATION: " id "\n\n"
                        "Type your message after the last \"* You\" heading.\n\n"
                        "* You\nWhat is due\nthis week?\n* Assistant\nNothing.\n* You\n"))
              (set-file-times file (encode-time '(0 0 12 26 11 2026 nil nil t)))
              (push file files)))
          (let* ((names (cl-letf (((symbol-function 'completing-read)
                                   (lambda (_prompt table &rest _)
                                     (throw 'names (mapcar #'car table)))))
                          (catch 'names (org-agent-chat--pick-saved))))
                 (picked nil))
            (should (= (length names) 3))
            (should (= (length (delete-dups (copy-sequence names))) 3))
            (should (seq-find (lambda (n) (string-match-p
                                           "\\`2026-11-26 10:15:00  What is due this week\\?" n))
                              names))
            (should (seq-find (lambda (n) (string-match-p
                                           "\\`2026-11-25 09:00:00  What is due this week\\?" n))
                              names))
            ;; Each name picks its own file.
            (dolist (name names)
              (cl-letf (((symbol-function 'completing-read) (lambda (&rest _) name)))
                (push (org-agent-chat--pick-saved) picked)))
            (should (equal (sort picked #'string<) (sort (copy-sequence files) #'string<)))))
      (delete-directory org-agent-state-directory t))))

;;;; F. M-x offers the user's commands

(defconst org-agent-newchat-test--owned-files
  '("org-agent-chat" "org-agent-backends" "org-agent" "org-agent-base" "org-agent-permissions"
    "org-agent-runs" "org-agent-tools" "org-agent-semantic" "org-agent-sentinel"
    "org-agent-build" "org-agent-approvals" "org-agent-skills" "org-agent-scans"
    "org-agent-store" "org-agent-dispatch" "org-agent-actuator")
  "The files whose commands this test checks.")

(defconst org-agent-newchat-test--user-commands
  '(org-agent-ask org-agent-build-module org-agent-chat org-agent-chat-compact org-agent-context-preview
    org-agent-embed-notes org-agent-find org-agent-interrupt org-agent-log org-agent-mode
    org-agent-new-chat org-agent-permissions-explain
    org-agent-run-skill org-agent-select-model org-agent-semantic-search org-agent-status
    org-agent-store-info org-agent-summarize-buffer
    org-agent-approvals org-agent-skills org-agent-skills-reload org-agent-import-skill
    org-agent-scan org-agent-daily-briefing org-agent-ingest-directory
    org-agent-reconcile)
  "The commands of those files M-x offers in any buffer.")

(defun org-agent-newchat-test--offered (buffer)
  "The commands of the owned files M-x offers in BUFFER, sorted."
  (let (offered)
    (mapatoms
     (lambda (s)
       (when (and (commandp s)
                  (string-prefix-p "org-agent" (symbol-name s))
                  (member (file-name-base (or (symbol-file s 'defun) ""))
                          org-agent-newchat-test--owned-files)
                  (command-completion-default-include-p s buffer))
         (push s offered))))
    (sort offered #'string<)))

(ert-deftest org-agent-newchat-m-x-offers-only-user-commands ()
  "Outside the chat, M-x offers the user's commands; the chat's keys only in it."
  (with-temp-buffer
    (should (equal (org-agent-newchat-test--offered (current-buffer))
                   (sort (copy-sequence org-agent-newchat-test--user-commands) #'string<))))
  (org-agent-test-kill-chat)
  (with-current-buffer (org-agent-chat)
    (let ((offered (org-agent-newchat-test--offered (current-buffer))))
      (dolist (c '(org-agent-chat-send org-agent-chat-quit org-agent-chat-approve
                   org-agent-chat-deny org-agent-chat-approve-for-conversation))
        (should (memq c offered))))
    ;; Organizing a subtree is for Org buffers (the chat is one).
    (should (memq 'org-agent-organize-subtree (org-agent-newchat-test--offered (current-buffer))))
    ;; Still keys of the chat.
    (should (eq (key-binding (kbd "C-c C-c")) 'org-agent-chat-send))
    (set-buffer-modified-p nil)
    (kill-buffer)))

(provide 'org-agent-newchat-test)
;;; org-agent-newchat-test.el ends here
