;;; org-agent-test-setup.el --- Shared set-up for org-agent's ERT tests -*- lexical-binding: t; -*-

;;; Commentary:

;; Loads org-agent from this checkout with the module built from it
;; (cargo build --release, installed into a temporary directory), and
;; gives each test a fresh state directory.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)

(defconst org-agent-test-root
  (expand-file-name "../../" (file-name-directory (or load-file-name buffer-file-name)))
  "Root of the org-agent checkout.")

(defconst org-agent-test-corpus
  (expand-file-name "../shared/corpus/" org-agent-test-root)
  "The shared corpus of real Org files.
It is beside this project's checkouts, not beside a user's clone: a
test that reads it starts with `org-agent-test-require-corpus'.")

(add-to-list 'load-path (expand-file-name "elisp" org-agent-test-root))
(defvar org-agent-module-directory)
(defvar org-agent-state-directory)
(setq org-agent-module-directory (make-temp-file "org-agent-ert-module" t))
(setq org-agent-state-directory (make-temp-file "org-agent-ert-state" t))
(add-hook 'kill-emacs-hook
          (lambda ()
            (delete-directory org-agent-module-directory t)
            (delete-directory org-agent-state-directory t)))
(require 'org-agent)
;; The skills of the user running the tests (~/.claude/skills…) are not the tests'.
(setq org-agent-skill-import-directories nil)
;; Org 9.6 and later persist their element cache under ~/.cache/org-persist; tests keep out
;; of the home directory, and under 9.6 hashing a buffer with raw bytes for it prompts.
(defvar org-element-cache-persistent)
(setq org-element-cache-persistent nil)
;; Always install the module built from this checkout (cargo is a no-op when it is up to
;; date): a version stamp alone would keep a stale module between code changes.
(org-agent-build-module-sync)
(org-agent--start)

(defun org-agent-test-delete-state (dir)
  "Delete DIR, a state directory whose store was just closed.
A worker finishing what was asked before the close (a directory
ingest's last commits, and the log's seal after them) may still add a
file there for a moment."
  (let ((tries 0))
    (while (condition-case err
               (progn (delete-directory dir t) nil)
             (file-error
              (if (< (cl-incf tries) 100)
                  (progn (sleep-for 0.05) t)
                (signal (car err) (cdr err))))))))

(defmacro org-agent-test-with-store (&rest body)
  "Run BODY with a fresh, empty, persisted store in a temporary directory.
The directory is bound to `org-agent-test-state'."
  (declare (indent 0) (debug t))
  `(let* ((org-agent-test-state (make-temp-file "org-agent-ert" t))
          (org-agent-state-directory org-agent-test-state))
     (unwind-protect
         (progn
           (org-agent--store-open org-agent-test-state)
           ,@body)
       (org-agent--store-close)
       (org-agent-test-delete-state org-agent-test-state))))

;;;; The scripted LLM server as the backend

(require 'org-agent-test-server)

(defvar org-agent-test-idle-timeout 2
  "Seconds the test backend may stay silent before its request fails.")

(defun org-agent-test-start-server ()
  "Start a fresh scripted LLM server, built from this checkout; return its port."
  (org-agent-test-server-start (org-agent-test-server-binary org-agent-test-root)))

(defun org-agent-test-backends (port)
  "Return a value of `org-agent-backends' naming only the test server on PORT.
Its idle timeout is `org-agent-test-idle-timeout'."
  (list (list :name "test" :url (format "http://127.0.0.1:%d/v1" port)
              :model "test" :key "sk-test" :idle-timeout org-agent-test-idle-timeout)))

(defmacro org-agent-test-with-server (bindings &rest body)
  "Run BODY with a fresh store and a fresh test server as the only backend.
BINDINGS, `let*' bindings, are made first.  Then `port' is the
server's, `finished' holds (CONVERSATION ANSWER) once a chat turn
ends, and `send' types its argument at the end of the current buffer
and sends it with `org-agent-chat-send'."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* (,@bindings
            (port (org-agent-test-start-server))
            (org-agent-backends (org-agent-test-backends port))
            (finished nil)
            (org-agent-turn-finished-functions
             (list (lambda (conv answer) (setq finished (list conv answer)))))
            (send (lambda (text)
                    (setq finished nil)
                    (goto-char (point-max))
                    (insert text)
                    (org-agent-chat-send))))
       (ignore port finished send)
       ,@body)))

;;;; Files

(defun org-agent-test-kill-file-buffers (directory)
  "Kill, unsaved, every buffer visiting a file under DIRECTORY."
  (dolist (buffer (buffer-list))
    (let ((file (buffer-file-name buffer)))
      (when (and file (string-prefix-p directory file))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)))))

;;;; Skills

(defun org-agent-test-reload-skills ()
  "Load the skills again; return the module's report, or nil after 30 seconds."
  (let (report)
    (org-agent-skills-reload (lambda (event) (setq report event)))
    (org-agent-test-wait (lambda () report) 30)))

;;;; Fixtures

(defun org-agent-test-fixture (name)
  "Return the text of the file NAME in tests/fixtures/."
  (with-temp-buffer
    (insert-file-contents (expand-file-name name (expand-file-name "tests/fixtures"
                                                                   org-agent-test-root)))
    (buffer-string)))

(defun org-agent-test-skill-draft (name)
  "Return the skill draft of tests/fixtures/skill-draft.org, named NAME.
One deny rule (a project marked DONE stays done) and the test that holds it."
  (replace-regexp-in-string "^#\\+SKILL_NAME: .*$" (concat "#+SKILL_NAME: " name)
                            (org-agent-test-fixture "skill-draft.org") t t))

;;;; Chat

(defun org-agent-test-kill-chat ()
  "Kill the chat buffer, unsaved.
The next `org-agent-chat' then begins a new conversation."
  (when (get-buffer org-agent-chat-buffer-name)
    (with-current-buffer org-agent-chat-buffer-name (set-buffer-modified-p nil))
    (kill-buffer org-agent-chat-buffer-name)))

(defun org-agent-test-unbound (body)
  "BODY (a parsed request) as JSON text, each data-block boundary the same.
Each request draws its boundary afresh, so two bodies compare equal only so."
  (replace-regexp-in-string
   "data-[0-9a-f]\\{8\\}\\(?:-[0-9a-f]\\{4\\}\\)\\{3\\}-[0-9a-f]\\{12\\}" "data-BOUNDARY"
   (json-encode body) t t))

(defun org-agent-test-wait (predicate &optional seconds)
  "Process events until PREDICATE returns non-nil or SECONDS (default 60) pass.
Return PREDICATE's value."
  (let ((deadline (+ (float-time) (or seconds 60)))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

;; The shipped skills load on a worker when org-agent starts; wait for them once, so that
;; every test sees their rules from its first turn on.
(unless (org-agent-test-wait #'org-agent-skills-active 30)
  (error "The shipped skills did not load: %S" org-agent-skills--inactive))

(defun org-agent-test-corpus-files ()
  "Return every Org file of the shared corpus, sorted."
  (sort (directory-files-recursively org-agent-test-corpus "\\.org\\'") #'string<))

(defun org-agent-test-require-corpus ()
  "Skip the current test, saying why, when the shared corpus is absent."
  (unless (file-directory-p org-agent-test-corpus)
    ;; ERT's batch report names a skipped test, not its reason: say it here too.
    (message "skipped: ../shared/corpus is not beside this checkout (%s)"
             (ert-test-name (ert-running-test)))
    (ert-skip "skipped: ../shared/corpus is not beside this checkout")))

(defun org-agent-test-checkout-org-files ()
  "Return the Org files of this checkout, sorted.
Its README, the demo notes, the skills and the test fixtures: real Org
that every clone has."
  (sort (cons (expand-file-name "README.org" org-agent-test-root)
              (mapcan (lambda (sub)
                        (directory-files-recursively
                         (expand-file-name sub org-agent-test-root) "\\.org\\'"))
                      '("demo" "skills" "tests/fixtures")))
        #'string<))

(defun org-agent-test-unblock (block)
  "The text inside BLOCK, a data block the model reads a tool result in.
A block is a line <<data-BOUNDARY tool=\"NAME\">>, the text, and a line
<</data-BOUNDARY>>; anything else fails the test."
  (should (string-match
           "\\`<<\\(data-[-0-9a-f]+\\) [^\n]*>>\n\\(\\(?:.\\|\n\\)*\\)\n<</\\1>>\n\\'"
           block))
  (match-string 2 block))

(defun org-agent-test-copy-demo-notes (dir)
  "Copy the demo notes (demo/notes/*.org) into DIR."
  (dolist (f (directory-files (expand-file-name "demo/notes" org-agent-test-root) t
                              "\\.org\\'"))
    (copy-file f (expand-file-name (file-name-nondirectory f) dir))))

(defun org-agent-test-start-session (name program notes state seed)
  "Start a child Emacs NAME running PROGRAM on NOTES and STATE with SEED.
The child reads them from ORG_AGENT_KILL_NOTES, _STATE and _SEED, and
the module's directory from ORG_AGENT_KILL_MODULE; its output goes to a
buffer of its own.  Return its process."
  (let ((process-environment
         (append (list (concat "ORG_AGENT_KILL_NOTES=" notes)
                       (concat "ORG_AGENT_KILL_STATE=" state)
                       (concat "ORG_AGENT_KILL_MODULE=" org-agent-module-directory)
                       (concat "ORG_AGENT_KILL_SEED=" seed))
                 process-environment)))
    (make-process :name name
                  :buffer (generate-new-buffer (format " *%s*" name))
                  :command (list (expand-file-name invocation-name invocation-directory)
                                 "-Q" "--batch" "-l" program)
                  :connection-type 'pipe :noquery t :sentinel #'ignore)))

(provide 'org-agent-test-setup)
;;; org-agent-test-setup.el ends here
