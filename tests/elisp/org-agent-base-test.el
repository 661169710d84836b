;;; org-agent-base-test.el --- The package's foundations in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; What every file of the package relies on: the module's functions as
;; org-agent-base.el declares them, the error symbols, and each file
;; loading on its own with the customization group defined first.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-base)

(defun org-agent-base-test--module-functions ()
  "The functions the loaded module defines, as (NAME . ARITY), sorted."
  (let (found)
    (mapatoms (lambda (symbol)
                (when (and (fboundp symbol) (module-function-p (symbol-function symbol)))
                  (push (cons symbol (func-arity (symbol-function symbol))) found))))
    (sort found (lambda (a b) (string< (car a) (car b))))))

(ert-deftest org-agent-base-declares-every-module-function ()
  "`org-agent--module-functions' lists exactly the module's functions, with their arity."
  (let ((declared (sort (mapcar (lambda (f) (let ((n (length (cdr f))))
                                              (cons (car f) (cons n n))))
                                org-agent--module-functions)
                        (lambda (a b) (string< (car a) (car b)))))
        (defined (org-agent-base-test--module-functions)))
    (should (> (length defined) 40))
    (should (equal (seq-difference (mapcar #'car defined) (mapcar #'car declared)) nil))
    (should (equal (seq-difference (mapcar #'car declared) (mapcar #'car defined)) nil))
    (should (equal declared defined))))

(ert-deftest org-agent-base-errors-have-their-parents ()
  "The error symbols exist with their parents, the module's definitions agreeing."
  (should (featurep 'org-agent-module))
  (pcase-dolist (`(,symbol ,message ,conditions)
                 '((org-agent-error "org-agent error" (org-agent-error error))
                   (org-agent-config-error "org-agent configuration error"
                                           (org-agent-config-error org-agent-error error))
                   (org-agent-store-error "org-agent store error"
                                          (org-agent-store-error org-agent-error error))
                   (org-agent-module-error "org-agent module error"
                                           (org-agent-module-error org-agent-error error))
                   (org-agent-action-error "org-agent action error"
                                           (org-agent-action-error org-agent-error error))))
    (should (equal (get symbol 'error-message) message))
    (should (equal (get symbol 'error-conditions) conditions)))
  ;; What the module signals is caught as the parent.
  (should-error (org-agent--print-sexp (list (current-buffer))) :type 'org-agent-error))

(ert-deftest org-agent-base-a-bad-tool-definition-is-a-configuration-error ()
  "`org-agent-define-tool' refuses a bad definition with `org-agent-config-error'."
  (should-error (org-agent-define-tool :name "no spaces allowed" :description "x"
                                       :function #'ignore)
                :type 'org-agent-config-error)
  (should-error (org-agent-define-tool :name "typed" :description "x" :function #'ignore
                                       :args '((:name "n" :type complex)))
                :type 'org-agent-config-error)
  (should-not (seq-find (lambda (tool) (equal (plist-get tool :name) "typed"))
                        (org-agent-tools))))

(defconst org-agent-base-test--load-check
  "(progn
     (defvar early nil)
     (advice-add 'custom-declare-variable :before
                 (lambda (symbol _default _doc &rest args)
                   (when (and (eq (plist-get args :group) 'org-agent)
                              (not (get 'org-agent 'group-documentation)))
                     (push symbol early)))))"
  "Code a child Emacs runs before loading a file: it notes each option of
group `org-agent' declared before the group.")

(ert-deftest org-agent-base-each-file-loads-alone-with-its-group-first ()
  "Each file of the package loads in a fresh Emacs on its own; no option precedes the group."
  (let ((files (directory-files (expand-file-name "elisp" org-agent-test-root) nil
                                "\\`org-agent[-a-z]*\\.el\\'")))
    (should (member "org-agent-base.el" files))
    (dolist (file files)
      (let ((feature (file-name-base file)))
        (with-temp-buffer
          (let ((status (call-process
                         (expand-file-name invocation-name invocation-directory) nil t nil
                         "-Q" "--batch" "-L" (expand-file-name "elisp" org-agent-test-root)
                         "--eval" org-agent-base-test--load-check
                         "-l" feature
                         "--eval" (format "(princ (format \"\\nRESULT %%S %%S\\n\" (featurep '%s) early))"
                                          feature))))
            (should (equal (list file status) (list file 0)))
            (goto-char (point-min))
            (should (re-search-forward "^RESULT \\(.*\\)$" nil t))
            (should (equal (list file (match-string 1)) (list file "t nil")))))))))

(provide 'org-agent-base-test)
;;; org-agent-base-test.el ends here
