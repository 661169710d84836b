;;; org-agent-run-test.el --- A newcomer's first start: one build, then the chat -*- lexical-binding: t; -*-

;;; Commentary:

;; What `scripts/run' does on a machine where the module was never
;; installed: `org-agent-mode' starts the module build, then
;; `org-agent-chat' is called at once.  There must be one build, and
;; the chat must open by itself when the module is loaded.  This file
;; deliberately does not load org-agent-test-setup (which installs the
;; module first): the module directory here starts empty.

;;; Code:

(require 'ert)
(require 'cl-lib)

(defconst org-agent-run-test-root
  (expand-file-name "../../" (file-name-directory (or load-file-name buffer-file-name)))
  "Root of the org-agent checkout.")

(add-to-list 'load-path (expand-file-name "elisp" org-agent-run-test-root))
(setq org-agent-module-directory (make-temp-file "org-agent-run-module" t))
(setq org-agent-state-directory (make-temp-file "org-agent-run-state" t))
(add-hook 'kill-emacs-hook
          (lambda ()
            (delete-directory org-agent-module-directory t)
            (delete-directory org-agent-state-directory t)))
(require 'org-agent)

(ert-deftest org-agent-run-one-build-then-the-chat-opens ()
  "Mode and chat during the first build: one cargo build, and the chat opens once loaded."
  (let* ((builds 0)
         (notes (make-temp-file "org-agent-run-notes" t))
         (org-agent-build-without-asking t)
         (count (lambda (&rest _) (cl-incf builds))))
    (should-not (featurep 'org-agent-module))
    (copy-directory (expand-file-name "demo/notes" org-agent-run-test-root) notes nil t t)
    (advice-add 'compilation-start :before count)
    (unwind-protect
        (let ((org-agent-directories (list notes)))
          ;; As in an interactive Emacs: the build runs in a compilation buffer.
          (let ((noninteractive nil))
            (org-agent-mode 1)
            (should-not (org-agent-chat)))
          (should (= builds 1))
          (let ((deadline (+ (float-time) 900)))
            (while (and (not (get-buffer org-agent-chat-buffer-name))
                        (< (float-time) deadline))
              (accept-process-output nil 0.1)))
          (should (featurep 'org-agent-module))
          (should (= builds 1))
          (should (get-buffer org-agent-chat-buffer-name))
          (with-current-buffer org-agent-chat-buffer-name
            (should (derived-mode-p 'org-agent-chat-mode))
            (should (string-match-p "^\\* You$" (buffer-string)))))
      (advice-remove 'compilation-start count)
      (org-agent-mode -1)
      (delete-directory notes t))))

(provide 'org-agent-run-test)
;;; org-agent-run-test.el ends here
