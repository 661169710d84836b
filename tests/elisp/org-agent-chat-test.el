;;; org-agent-chat-test.el --- The chat buffer end to end in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; The chat against a REAL model server (llama.cpp's server with
;; SmolLM2, from PyPI, via scripts/local-llm), and against a dead port.
;; Assertions on structure, never on wording.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-here)

(defvar org-agent-chat-test--server nil "The model server process.")
(defvar org-agent-chat-test--port nil "Its port.")

(defun org-agent-chat-test--server ()
  "Start (once) a real model server; return its port."
  (unless (process-live-p org-agent-chat-test--server)
    (let ((port (org-agent-backends--free-port))
          (ready nil))
      (setq org-agent-chat-test--server
            (make-process :name "local-llm" :buffer (get-buffer-create " *local-llm*")
                          :command (list (expand-file-name "scripts/local-llm" org-agent-test-root)
                                         "serve" "smollm2" (number-to-string port))
                          :noquery t
                          :filter (lambda (_ out) (when (string-match-p "ready" out) (setq ready t)))))
      (add-hook 'kill-emacs-hook (lambda () (ignore-errors (interrupt-process org-agent-chat-test--server)
                                                            (sleep-for 0.5)
                                                            (delete-process org-agent-chat-test--server))))
      (should (org-agent-test-wait (lambda () ready) 600))
      (setq org-agent-chat-test--port port)))
  org-agent-chat-test--port)

(defun org-agent-chat-test--fresh-chat ()
  "A new chat buffer."
  (org-agent-test-kill-chat)
  (org-agent-chat))

(ert-deftest org-agent-chat-streams-an-answer-from-a-real-model ()
  "A chat message to a real model streams an answer into the buffer."
  (let* ((port (org-agent-chat-test--server))
         (org-agent-backends `((:name "local" :type openai :url ,(format "http://127.0.0.1:%d/v1" port)
                                      :model "local" :first-byte-timeout 240)))
         (org-agent-temperature 0)
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (conv answer) (setq finished (list conv answer))))))
    (with-current-buffer (org-agent-chat-test--fresh-chat)
      (insert "Say hello in one short sentence.")
      (org-agent-chat-send)
      (should (org-agent-busy-p))
      (should (org-agent-test-wait (lambda () finished) 300))
      (should-not (org-agent-busy-p))
      (should (equal (car finished) org-agent-chat--conversation))
      (should (stringp (cadr finished)))
      (should (> (length (string-trim (cadr finished))) 0))
      (let ((text (buffer-string)))
        (should (string-match-p "^\\* You\nSay hello in one short sentence.\n\\* Assistant\n." text))
        ;; A new prompt waits at the end.
        (should (string-match-p "\n\\* You\n\\'" text))
        (should (string-search (string-trim (cadr finished)) text)))
      (should (equal org-agent-chat--state "idle"))
      (should (> org-agent-chat--tokens 0)))))

(ert-deftest org-agent-chat-reports-a-dead-backend-and-stays-usable ()
  "A backend that is not there gives a clear error in the chat, which stays usable."
  (let* ((url (format "http://127.0.0.1:%d/v1" (org-agent-backends--free-port)))
         (org-agent-backends `((:name "dead" :url ,url :model "x" :connect-timeout 5)))
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (_conv answer) (setq finished (list answer))))))
    (with-current-buffer (org-agent-chat-test--fresh-chat)
      (insert "Hello?")
      (org-agent-chat-send)
      (should (org-agent-test-wait (lambda () finished) 60))
      (should (null (car finished)))
      (should (string-match-p "Error: .*\\(transport\\|connect\\)" (buffer-string)))
      (should-not (org-agent-busy-p))
      ;; The chat takes the next message.
      (setq finished nil)
      (goto-char (point-max))
      (insert "Again?")
      (org-agent-chat-send)
      (should (org-agent-test-wait (lambda () finished) 60))
      ;; The failures are counted and logged.
      (let* ((backends (plist-get (org-agent--telemetry) :backends))
             (dead (assoc "dead" backends)))
        (should dead)
        (should (>= (plist-get (cdr dead) :failures) 2)))
      (org-agent-log)
      (with-current-buffer "*org-agent-log*"
        (should (string-match-p "\\*chat\\* .*error: .*transport" (buffer-string))))
      (org-agent-status)
      (with-current-buffer "*org-agent-status*"
        (should (string-match-p "^\\* Backends\n| name +| calls" (buffer-string)))
        (should (string-match-p "| dead +| +[0-9]+ | +[0-9]+ |" (buffer-string)))))))

(ert-deftest org-agent-ask-puts-the-question-in-the-chat ()
  "`org-agent-ask' sends one question from the minibuffer through the chat."
  (let* ((org-agent-backends `((:name "dead" :url ,(format "http://127.0.0.1:%d/v1" (org-agent-backends--free-port))
                                      :model "x")))
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer))))))
    (org-agent-chat-test--fresh-chat)
    (org-agent-ask "What is due this week?")
    (should (org-agent-test-wait (lambda () finished) 60))
    (with-current-buffer org-agent-chat-buffer-name
      (should (string-search "* You\nWhat is due this week?\n* Assistant\n" (buffer-string))))
    (should-error (org-agent-ask "   ") :type 'user-error)))

(ert-deftest org-agent-chat-saves-and-continues-conversations ()
  "Every turn saves the chat as an Org file; C-u org-agent-chat continues one with its history."
  (let* ((org-agent-backends `((:name "dead" :url ,(format "http://127.0.0.1:%d/v1" (org-agent-backends--free-port))
                                      :model "x")))
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (c _answer) (setq finished c)))))
    (with-current-buffer (org-agent-chat-test--fresh-chat)
      (insert "Hello?")
      (org-agent-chat-send)
      (should (org-agent-test-wait (lambda () finished) 60))
      (let ((saved (expand-file-name (concat finished ".org") (org-agent-chat--directory))))
        (should (file-exists-p saved))
        (with-temp-buffer
          (insert-file-contents saved)
          (should (string-search (concat "#+CONVERSATION: " finished) (buffer-string)))
          (should (string-search "* You\nHello?\n* Assistant\n" (buffer-string)))))))
  (let ((file (expand-file-name "chat-test-continue.org" (org-agent-chat--directory))))
    (with-temp-file file
      (insert "#+TITLE: org-agent chat\n#+CONVERSATION: chat-test-continue\n\n"
              "* You\nWhat is due?\n* Assistant\nThe quarterly report.\n"
              "** Tool: query_notes (allow)\n#+begin_src json\n{}\n#+end_src\n"
              "* You\nThanks!\n* Assistant\n#+begin_example\nError: timed out\n#+end_example\n* You\n"))
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt table &rest _)
                 (car (seq-find (lambda (c) (string-match-p "What is due" (car c))) table)))))
      (with-current-buffer (org-agent-chat '(4))
        (should (equal org-agent-chat--conversation "chat-test-continue"))
        (should (string-search "The quarterly report." (buffer-string)))
        (should (equal (org-agent--chat-history "chat-test-continue")
                       '((user . "What is due?") (assistant . "The quarterly report.")
                         (user . "Thanks!"))))
        (set-buffer-modified-p nil)
        (kill-buffer)))))

(ert-deftest org-agent-chat-without-backends-starts-a-local-model ()
  "With no backend configured, the chat brings up a real local model and answers."
  (let ((org-agent-backends nil)
        (org-agent-local-model 'smollm2)
        (org-agent-temperature 0)
        (finished nil))
    (let ((org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer))))))
      (unwind-protect
          (with-current-buffer (org-agent-chat-test--fresh-chat)
            (insert "Say hello in one short sentence.")
            (org-agent-chat-send)
            (should (equal org-agent-chat--state "starting the local model…"))
            (should (org-agent-test-wait (lambda () finished) 600))
            (should (stringp (car finished)))
            (should (string-match-p "local smollm2" org-agent-chat--backend-name)))
        (org-agent-backends--stop-local)))))

(ert-deftest org-agent-chat-needs-a-backend-and-a-message ()
  "Sending without a backend or without text says what is missing."
  (with-current-buffer (org-agent-chat-test--fresh-chat)
    (let ((org-agent-backends nil) (org-agent-local-model nil))
      (insert "Hi")
      (should-error (org-agent-chat-send) :type 'user-error))
    (let ((org-agent-backends '((:url "http://127.0.0.1:9/v1" :model "x"))))
      (erase-buffer)
      (insert "* You\n   ")
      (should-error (org-agent-chat-send) :type 'user-error))
    ;; A backend the module refuses: the error shows, the chat stays usable.
    (let ((org-agent-backends '((:url "http://127.0.0.1:9/v1" :model "x" :type :telepathy))))
      (goto-char (point-max))
      (insert "Hi")
      (org-agent-chat-send)
      (should (string-match-p "Error: " (buffer-string)))
      (should (equal org-agent-chat--state "idle"))
      (should (string-match-p "\n\\* You\n\\'" (buffer-string)))
      (should-not (org-agent-busy-p)))))

(ert-deftest org-agent-chat-interrupt-stops-a-turn ()
  "C-c C-k stops a turn in flight and the chat says so."
  (let* ((port (org-agent-chat-test--server))
         (org-agent-backends `((:name "local" :url ,(format "http://127.0.0.1:%d/v1" port) :model "local")))
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer))))))
    (with-current-buffer (org-agent-chat-test--fresh-chat)
      (insert "Write a long story about a lighthouse keeper, at least ten paragraphs.")
      (org-agent-chat-send)
      (org-agent-test-wait (lambda () (string-match-p "\\* Assistant\n." (buffer-string))) 120)
      (org-agent-interrupt)
      (should (org-agent-test-wait (lambda () finished) 30))
      (should (null (car finished)))
      (should (string-match-p "^- /Interrupted: you stopped this turn\\./$" (buffer-string)))
      (should-not (org-agent-busy-p)))))

(ert-deftest org-agent-chat-backend-keys-come-from-key-env-or-auth-source ()
  "A backend's key: :key, a function, :key-env, else auth-source for its host."
  (let ((process-environment (cons "ORG_AGENT_TEST_KEY=sk-from-env" process-environment))
        (auth-source-do-cache nil)
        (auth-sources nil))
    (should (equal (org-agent--backend-key '(:url "http://h/v1" :key "sk-1")) "sk-1"))
    (should (equal (org-agent--backend-key `(:url "http://h/v1" :key ,(lambda () "sk-2")))
                   "sk-2"))
    (should (equal (org-agent--backend-key '(:url "http://h/v1" :key-env "ORG_AGENT_TEST_KEY"))
                   "sk-from-env"))
    (let ((netrc (make-temp-file "org-agent-authinfo" nil nil
                                 "machine api.example.test login apikey password sk-netrc\n")))
      (unwind-protect
          (let ((auth-sources (list netrc)))
            (should (equal (org-agent--backend-key '(:url "https://api.example.test/v1"))
                           "sk-netrc")))
        (delete-file netrc)))))

;;;; The agent in any buffer, with the real model

(defmacro org-agent-chat-test--with-real-model (&rest body)
  "Run BODY with the real model server as the only backend, in a fresh Org buffer."
  (declare (indent 0) (debug t))
  `(let* ((port (org-agent-chat-test--server))
          (org-agent-backends `((:name "local" :type openai
                                       :url ,(format "http://127.0.0.1:%d/v1" port)
                                       :model "local" :first-byte-timeout 240
                                       ;; As the zero-config local backend caps it: a small
                                       ;; model at temperature 0 may otherwise repeat itself
                                       ;; for minutes.
                                       :max-tokens ,org-agent-local-max-tokens)))
          (org-agent-temperature 0)
          (buffer (generate-new-buffer "org-agent-real-here")))
     (unwind-protect
         (with-current-buffer buffer
           (org-mode)
           (buffer-enable-undo)
           ,@body)
       (with-current-buffer buffer (set-buffer-modified-p nil))
       (kill-buffer buffer))))

(defun org-agent-chat-test--settle (job)
  "Wait for the answer-in-place or rewrite JOB to end; return its state."
  (org-agent-test-wait (lambda () (not (eq (org-agent-here--job-state job) 'running))) 300)
  (org-agent-here--job-state job))

(ert-deftest org-agent-chat-real-model-answers-under-the-heading ()
  "A real model's answer lands as a child heading, Org only, in one undo step."
  (org-agent-chat-test--with-real-model
    (insert "* Garden\nTomatoes need water.\n* Kitchen\nTail.\n")
    (undo-boundary)
    (let ((before (buffer-string)))
      (goto-char (point-min))
      (let ((job (org-agent-here-ask "Name one vegetable in a short sentence." 'child)))
        (should (eq (org-agent-chat-test--settle job) 'done))
        ;; The outline around the answer is unchanged; the answer is a child of Garden.
        (let ((outline (let (out)
                         (org-map-entries (lambda () (push (list (org-outline-level)
                                                                  (org-get-heading t t t t))
                                                            out)))
                         (nreverse out))))
          (should (equal (car outline) '(1 "Garden")))
          (should (equal (car (last outline)) '(1 "Kitchen")))
          (should (equal (cadr outline) '(2 "Name one vegetable in a short sentence.")))
          ;; Whatever headings the model wrote stay below the child.
          (should (seq-every-p (lambda (h) (>= (car h) 2)) (butlast (cdr outline)))))
        (goto-char (point-min))
        (search-forward "Name one vegetable")
        (should (string-match-p "local" (org-entry-get nil "ORG_AGENT_MODEL")))
        (org-end-of-meta-data t)
        (should (> (length (string-trim (buffer-substring
                                         (point) (save-excursion (outline-next-heading) (point)))))
                   0))
        ;; No Markdown fence or heading survives in an Org buffer.
        (should-not (string-match-p "^```\\|^#+ " (buffer-string)))
        (undo-boundary)
        (let ((last-command nil)) (undo))
        (should (equal (buffer-string) before))))))

(ert-deftest org-agent-chat-real-model-rewrites-a-region ()
  "A real model's rewrite comes as a diff; accepting replaces only the region, in one undo step."
  (org-agent-chat-test--with-real-model
    (insert "* Note\nthe cat sat on teh mat\n* After\nKeep.\n")
    (undo-boundary)
    (let ((before (buffer-string)))
      (transient-mark-mode 1)
      (goto-char (point-min))
      (forward-line 1)
      (set-mark (point))
      (end-of-line)
      (activate-mark)
      (let ((job (org-agent-here-rewrite (region-beginning) (region-end)
                                         "Fix the spelling.")))
        (should (eq (org-agent-chat-test--settle job) 'done))
        (let ((proposal (with-current-buffer (org-agent-here--job-proposal job) (buffer-string)))
              (diff (org-agent-here--job-diff job)))
          (should (> (length (string-trim proposal)) 0))
          (with-current-buffer diff
            (should (derived-mode-p 'diff-mode))
            (org-agent-here-rewrite-accept))
          (should-not (buffer-live-p diff))
          (should (string-prefix-p "* Note\n" (buffer-string)))
          (should (string-suffix-p "* After\nKeep.\n" (buffer-string)))
          (should (string-search (string-trim proposal) (buffer-string)))
          (undo-boundary)
          (let ((last-command nil)) (undo))
          (should (equal (buffer-string) before)))))))

(provide 'org-agent-chat-test)
;;; org-agent-chat-test.el ends here
