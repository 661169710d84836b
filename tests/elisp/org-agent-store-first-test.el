;;; org-agent-store-first-test.el --- The zero-config chat answers what the notes say -*- lexical-binding: t; -*-

;;; Commentary:

;; With no backend configured, the chat's local model answers
;; store-first: what the store answers exactly (what is waiting,
;; scheduled today, overdue, finished…) it answers, and the model only
;; phrases it.  Checked on notes and questions written for the check
;; and kept apart from the demo (tests/fixtures/everyday), against the
;; REAL local model (Qwen2.5-0.5B through scripts/local-llm, as the
;; zero-config chat starts it), and against the test server for the
;; failure paths.  The figures (right of total, median seconds) are
;; printed as "store-first:" lines.

;;; Code:

(require 'org-agent-test-notes)
(require 'org-agent-chat)
(require 'org-agent-test-server)

(defconst org-agent-store-first-test--fixture
  (expand-file-name "tests/fixtures/everyday/" org-agent-test-root)
  "The notes and questions of the check.")

(defun org-agent-store-first-test--expand (text)
  "TEXT with each {d+N} or {d-N} replaced by the Org date N days from today."
  (replace-regexp-in-string
   "{d\\([-+][0-9]+\\)}"
   (lambda (m)
     (let ((n (string-to-number (substring m 2 -1))))
       (format-time-string "%F %a" (time-add nil (* n 86400)))))
   text t t))

(defun org-agent-store-first-test--notes ()
  "The fixture's notes as (NAME . TEXT), dated from today."
  (mapcar (lambda (name)
            (cons name (org-agent-store-first-test--expand
                        (with-temp-buffer
                          (insert-file-contents (expand-file-name name org-agent-store-first-test--fixture))
                          (buffer-string)))))
          '("work.org" "home.org")))

(defun org-agent-store-first-test--questions ()
  "The fixture's questions: a list of (QUESTION MUST MUST-NOT)."
  (with-temp-buffer
    (insert-file-contents (expand-file-name "questions.tsv" org-agent-store-first-test--fixture))
    (let (out)
      (dolist (line (split-string (buffer-string) "\n" t))
        (unless (string-prefix-p "#" line)
          (let ((cols (split-string line "\t")))
            (push (list (nth 0 cols)
                        (split-string (org-agent-store-first-test--expand (or (nth 1 cols) "")) "|" t)
                        (split-string (or (nth 2 cols) "") "|" t))
                  out))))
      (nreverse out))))

(defun org-agent-store-first-test--right-p (answer must must-not)
  "Whether ANSWER holds every fact of MUST (a date by its day) and none of MUST-NOT."
  (and (seq-every-p (lambda (fact)
                      (string-search (if (string-match "\\`[0-9]\\{4\\}-[0-9][0-9]-[0-9][0-9]" fact)
                                         (match-string 0 fact)
                                       fact)
                                     answer))
                    must)
       (not (seq-some (lambda (fact) (string-search fact answer)) must-not))))

(defun org-agent-store-first-test--ask (question seconds)
  "Send QUESTION in a fresh chat; return (ANSWER-TEXT ELAPSED) within SECONDS, or nil."
  (let* ((finished nil)
         (org-agent-turn-finished-functions
          (list (lambda (_c answer) (setq finished (list (or answer ""))))))
         (start (float-time)))
    (org-agent-test-kill-chat)
    (with-current-buffer (org-agent-chat)
      (goto-char (point-max))
      (insert question)
      (org-agent-chat-send)
      (when (org-agent-test-wait (lambda () finished) seconds)
        (list (buffer-substring-no-properties
               (or (save-excursion (goto-char (point-min))
                                   (and (search-forward "* Assistant\n" nil t) (point)))
                   (point-min))
               (point-max))
              (- (float-time) start))))))

(defun org-agent-store-first-test--median (xs)
  "The median of the numbers XS."
  (let ((s (sort (copy-sequence xs) #'<)))
    (if (cl-oddp (length s))
        (nth (/ (length s) 2) s)
      (/ (+ (nth (1- (/ (length s) 2)) s) (nth (/ (length s) 2) s)) 2.0))))

(ert-deftest org-agent-store-first-answers-everyday-questions-with-the-local-model ()
  "The zero-config chat answers >= 8 of 10 everyday questions right on notes it never saw.
The real local model (Qwen2.5-0.5B) phrases; the store answers."
  (org-agent-test-with-notes-dir (org-agent-store-first-test--notes)
    (let ((org-agent-backends nil)
          (org-agent-local-model 'qwen)
          (org-agent-temperature 0)
          (right 0) (times nil) (total 0))
      (unwind-protect
          (dolist (q (org-agent-store-first-test--questions))
            (let* ((got (org-agent-store-first-test--ask (car q) 900))
                   (ok (and got (org-agent-store-first-test--right-p (car got) (nth 1 q) (nth 2 q)))))
              (setq total (1+ total))
              (when ok (setq right (1+ right)))
              (when got (push (cadr got) times))
              (message "store-first: %s %5.1f s  %s" (if ok "right" "WRONG") (or (cadr got) -1) (car q))
              (message "%s" (or (car got) "no answer"))))
        (org-agent-backends--stop-local))
      (message "store-first: %d of %d right, median %.1f s (the first starts the local model)"
               right total (if times (org-agent-store-first-test--median times) -1))
      (should (= total 10))
      (should (>= right 8)))))

(ert-deftest org-agent-store-first-shows-the-notes-when-the-model-fails ()
  "The store's answer is shown even when the model that phrases it fails."
  (org-agent-test-with-notes-dir (org-agent-store-first-test--notes)
    (let* ((port (org-agent-test-server-start
                  (org-agent-test-server-binary org-agent-test-root)))
           ;; The local model's place, taken by the test server, which answers 500.
           (org-agent-backends--local (list org-agent-test-server--process port t (quote qwen)))
           (org-agent-backends nil)
           (org-agent-local-model 'qwen))
      (unwind-protect
          (progn
            (dotimes (_ 4) (org-agent-test-server-push :status 500 :message "boom"))
            (let ((got (org-agent-store-first-test--ask "What is waiting?" 60)))
              (should got)
              (should (string-search "Travel grant approval" (car got)))
              (should (string-search "Dr. Okafor" (car got)))
              (should-not (string-search "adoption" (car got)))))
        (setq org-agent-backends--local nil)
        (org-agent-test-server-stop)))))

(ert-deftest org-agent-store-first-refuses-tool-skills-at-once ()
  "/NAME of a skill that needs tools says so at once, before any request."
  (org-agent-test-with-notes-dir (org-agent-store-first-test--notes)
    (let* ((port (org-agent-test-server-start
                  (org-agent-test-server-binary org-agent-test-root)))
           (org-agent-backends--local (list org-agent-test-server--process port t (quote qwen)))
           (org-agent-backends nil)
           (org-agent-local-model 'qwen))
      (unwind-protect
          (let ((got (org-agent-store-first-test--ask "/skill-author a skill for my reading list" 30)))
            (should got)
            (should (string-search "needs a model that calls tools" (car got)))
            (should (string-search "org-agent-backends" (car got)))
            (should (null (org-agent-test-server-requests))))
        (setq org-agent-backends--local nil)
        (org-agent-test-server-stop)))))

(ert-deftest org-agent-store-first-organize-subtree-says-at-once-it-needs-a-backend ()
  "On the local model, organizing a subtree says at once that it needs tools."
  (org-agent-test-with-notes-dir (org-agent-store-first-test--notes)
    (let ((org-agent-backends nil)
          (org-agent-local-model 'qwen))
      (with-current-buffer (find-file-noselect (funcall path "work.org"))
        (goto-char (point-min))
        (re-search-forward "^\\* Budget spreadsheet")
        (let ((err (should-error (org-agent-organize-subtree) :type 'user-error)))
          (should (string-match-p "org-agent-backends" (cadr err))))
        (should-not org-agent-backends--local)
        (should-not (org-agent-busy-p))))))

(defun org-agent-store-first-test--preview-then-send (question)
  "Preview QUESTION in a fresh chat, then send it; return (PREVIEWED SENT) bodies."
  (let ((shown nil) (finished nil))
    (org-agent-test-kill-chat)
    (with-current-buffer (org-agent-chat)
      (goto-char (point-max))
      (insert question)
      (cl-letf* ((orig (symbol-function 'org-agent-chat--show-preview))
                 ((symbol-function 'org-agent-chat--show-preview)
                  (lambda (event) (setq shown event) (funcall orig event))))
        (org-agent-context-preview)
        (should (org-agent-test-wait (lambda () shown) 30)))
      (should (eq (plist-get shown :type) 'preview))
      (let ((before (length (org-agent-test-server-requests)))
            (org-agent-turn-finished-functions (list (lambda (_c _a) (setq finished t)))))
        (org-agent-test-server-push :text "You have three.")
        (org-agent-chat-send)
        (should (org-agent-test-wait (lambda () finished) 60))
        (let ((json-array-type 'list) (json-object-type 'alist) (json-key-type 'string))
          (list (json-read-from-string (plist-get shown :body))
                (nth before (org-agent-test-server-requests))))))))

(ert-deftest org-agent-store-first-preview-is-the-local-models-request ()
  "The context preview of the local model is the very request it gets: store-first when
the store answers, else the notes with no tool schemas; with its max_tokens."
  (org-agent-test-with-notes-dir (org-agent-store-first-test--notes)
    (let* ((port (org-agent-test-server-start
                  (org-agent-test-server-binary org-agent-test-root)))
           (org-agent-backends--local (list org-agent-test-server--process port t 'qwen))
           (org-agent-backends nil)
           (org-agent-local-model 'qwen))
      (unwind-protect
          (progn
            (pcase-let ((`(,previewed ,sent)
                         (org-agent-store-first-test--preview-then-send "What is waiting?")))
              (should (equal previewed sent))
              (should (string-search "Travel grant approval" (json-encode sent)))
              (should (null (assoc "tools" sent)))
              (should (assoc "max_tokens" sent)))
            (pcase-let ((`(,previewed ,sent)
                         (org-agent-store-first-test--preview-then-send
                          "Write a haiku about the sea")))
              (should (equal (org-agent-test-unbound previewed)
                             (org-agent-test-unbound sent)))
              (should (null (assoc "tools" sent)))
              (should (equal (cdr (assoc "max_tokens" sent)) org-agent-local-max-tokens))))
        (setq org-agent-backends--local nil)
        (org-agent-test-server-stop)))))

(provide 'org-agent-store-first-test)
;;; org-agent-store-first-test.el ends here
