;;; org-agent-names-test.el --- The Elisp files talk through public names -*- lexical-binding: t; -*-

;;; Commentary:

;; A name `org-agent-FILE--NAME' belongs to the file that defines it:
;; another file of elisp/ uses the file's public names instead.  The
;; package's shared internals are `org-agent--NAME' (org-agent-base.el
;; and the module's functions); they are not checked here.  This test
;; reads every file of elisp/ as Lisp (docstrings and comments do not
;; count) and lists each use of another file's private name.

;;; Code:

(require 'ert)
(require 'cl-lib)

(defvar org-agent-names-test-elisp
  (expand-file-name "../../elisp/" (file-name-directory (or load-file-name buffer-file-name)))
  "The elisp/ directory of this checkout.")

(defconst org-agent-names-test-definers
  '(defun defmacro defsubst defvar defvar-local defconst defcustom defface defgroup
          defalias define-inline cl-defun cl-defmacro cl-defsubst cl-defgeneric cl-defmethod
          define-minor-mode define-derived-mode define-globalized-minor-mode)
  "The forms whose second element is the name they define.")

(defun org-agent-names-test-private-p (symbol)
  "Return non-nil when SYMBOL is a name private to one org-agent file."
  (string-match-p "\\`org-agent-[a-z0-9]\\(?:[a-z0-9-]*[a-z0-9]\\)?--[^-]" (symbol-name symbol)))

(defun org-agent-names-test-forms (file)
  "Return the top-level forms of FILE."
  (with-temp-buffer
    (insert-file-contents file)
    (let (forms)
      (condition-case nil
          (while t (push (read (current-buffer)) forms))
        (end-of-file nil))
      (nreverse forms))))

(defun org-agent-names-test-walk (form fn)
  "Call FN with each symbol and each cons in FORM, a tree of conses and vectors."
  (cond
   ((symbolp form) (funcall fn form))
   ((consp form)
    (funcall fn form)
    (while (consp form)
      (org-agent-names-test-walk (car form) fn)
      (setq form (cdr form)))
    (when form (org-agent-names-test-walk form fn)))
   ((vectorp form) (mapc (lambda (x) (org-agent-names-test-walk x fn)) form))))

(defun org-agent-names-test-definition (form)
  "Return the name FORM defines, or nil.
A `defvar' without a value only declares a variable: it defines nothing."
  (when (and (consp form) (memq (car form) org-agent-names-test-definers)
             (consp (cdr form)))
    (let ((name (cadr form)))
      (when (eq (car-safe name) 'quote) (setq name (cadr name)))
      (and (symbolp name)
           (not (and (eq (car form) 'defvar) (null (cddr form))))
           name))))

(defun org-agent-names-test-cross-uses ()
  "Return the uses of a file's private name in another file of elisp/.
Each is (NAME DEFINING-FILE USING-FILE), sorted."
  (let ((defined (make-hash-table :test #'eq))
        (used (make-hash-table :test #'equal))
        found)
    (dolist (file (directory-files org-agent-names-test-elisp t "\\`org-agent.*\\.el\\'"))
      (let ((base (file-name-nondirectory file)))
        (dolist (form (org-agent-names-test-forms file))
          (org-agent-names-test-walk
           form
           (lambda (x)
             (if (consp x)
                 (let ((name (org-agent-names-test-definition x)))
                   (when (and name (org-agent-names-test-private-p name))
                     (cl-pushnew base (gethash name defined) :test #'equal)))
               (when (org-agent-names-test-private-p x)
                 (puthash (cons x base) t used))))))))
    (maphash (lambda (key _)
               (let ((definers (gethash (car key) defined)))
                 (when (and definers (not (member (cdr key) definers)))
                   (push (list (symbol-name (car key)) (car definers) (cdr key)) found))))
             used)
    (sort found (lambda (a b) (string< (format "%S" a) (format "%S" b))))))

(ert-deftest org-agent-names-no-file-uses-another-files-private-names ()
  "Each file reaches another only through its public names."
  (should (equal (org-agent-names-test-cross-uses) nil)))

(ert-deftest org-agent-names-the-check-sees-a-cross-use ()
  "The scan finds a private name of one file used in another, and nothing else."
  (let ((org-agent-names-test-elisp (make-temp-file "org-agent-names" t)))
    (unwind-protect
        (progn
          (with-temp-file (expand-file-name "org-agent-a.el" org-agent-names-test-elisp)
            (insert "(defun org-agent-a--helper () \"Help.\" 1)\n"
                    "(defvar org-agent-b--state)\n"
                    "(defun org-agent-a-public () \"Use `org-agent-b--doc'.\" (org-agent-a--helper))\n"))
          (with-temp-file (expand-file-name "org-agent-b.el" org-agent-names-test-elisp)
            (insert "(defvar org-agent-b--state nil \"State.\")\n"
                    "(defun org-agent-b-f () \"F.\" (list org-agent-b--state #'org-agent-a--helper))\n"))
          (should (equal (org-agent-names-test-cross-uses)
                         '(("org-agent-a--helper" "org-agent-a.el" "org-agent-b.el")
                           ("org-agent-b--state" "org-agent-b.el" "org-agent-a.el")))))
      (delete-directory org-agent-names-test-elisp t))))

(provide 'org-agent-names-test)
;;; org-agent-names-test.el ends here
