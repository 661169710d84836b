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
                   (let ((group (plist-get args :group)))
                     (when (and (string-prefix-p \"org-agent-\" (symbol-name symbol))
                                (not (and group (get group 'group-documentation))))
                       (push symbol early))))))"
  "Code a child Emacs runs before loading a file: it notes each option of
org-agent declared without a group or before its group.")

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

;; Options are found by their group in Customize: each is in one subgroup of `org-agent'.
(ert-deftest org-agent-base-every-option-is-in-one-subgroup ()
  "Each option of the package is in one group, a subgroup of `org-agent'."
  (let ((subgroups (mapcar #'car (seq-filter (lambda (member) (eq (cadr member) 'custom-group))
                                             (get 'org-agent 'custom-group))))
        (groups-of (make-hash-table))
        options)
    (should (>= (length subgroups) 5))
    (mapatoms
     (lambda (symbol)
       (when (and (get symbol 'group-documentation)
                  (string-prefix-p "org-agent" (symbol-name symbol)))
         (dolist (member (get symbol 'custom-group))
           (when (eq (cadr member) 'custom-variable)
             (push symbol (gethash (car member) groups-of)))))
       ;; `org-agent-mode', the package's switch, stays in `org-agent' itself; its hook too.
       (when (and (custom-variable-p symbol)
                  (string-prefix-p "org-agent-" (symbol-name symbol))
                  (not (memq symbol '(org-agent-mode org-agent-mode-hook))))
         (push symbol options))))
    (should (> (length options) 50))
    (dolist (option options)
      (let ((groups (gethash option groups-of)))
        (should (equal (list option (length groups)) (list option 1)))
        (should (memq (car groups) subgroups))
        (should (get (car groups) 'group-documentation))))))

(provide 'org-agent-base-test)
;;; org-agent-base-test.el ends here
