;;; org-agent-tools.el --- Tools for the agent, written in Elisp -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `org-agent-define-tool' gives the agent a tool whose body is an
;; Elisp function.  The shape follows gptel's `gptel-make-tool':
;;
;;   (org-agent-define-tool
;;    :name "word_count"
;;    :description "Count the words of a file."
;;    :args (list '(:name "file" :type string :description "a file name"))
;;    :function (lambda (file) ...)
;;    :confirm nil)
;;
;; The LLM sees the tool with the built-in ones.  When it calls it, the
;; loop gates the call (a tool defined with :confirm asks the user
;; first) and the actuator runs FUNCTION on the main thread with the
;; arguments in the order of :args; its value (a string, or anything
;; printed with `prin1') goes back to the LLM.
;;
;; A skill's `emacs-lisp' tool blocks (skills/README.org, * Tools) become
;; tools the same way when the skills load: each block is read (never
;; evaluated then) as the body of a function of the tool's arguments.

;;; Code:

(require 'org-agent-base)
(require 'cl-lib)
(require 'json)
(require 'seq)
(require 'subr-x)
(require 'org-agent-actuator)

(defvar org-agent-tools--table (make-hash-table :test #'equal)
  "Tool name → its definition plist, for the tools defined in Elisp.")

(defvar org-agent-tools--skill-table (make-hash-table :test #'equal)
  "Tool name → its definition plist, for the Elisp tools of the active skills.
Replaced whenever the skills load (`org-agent-tools-define-skill-tools').")

(defconst org-agent-tools--types
  '(string number integer boolean array object null)
  "The JSON schema types an argument may have.")

(defun org-agent-tools--invalid (format-string &rest args)
  "Signal a configuration error with a message made from FORMAT-STRING and ARGS."
  (signal 'org-agent-config-error (list (apply #'format format-string args))))

(defun org-agent-tools--schema (spec)
  "The JSON schema (an alist for `json-encode') of the argument SPEC plist."
  (let ((type (plist-get spec :type)))
    (when (stringp type) (setq type (intern type)))
    (unless (memq type org-agent-tools--types)
      (org-agent-tools--invalid "Argument %S: :type must be one of %s, not %S"
                                (plist-get spec :name) org-agent-tools--types type))
    (append
     `((type . ,(symbol-name type)))
     (when-let ((d (plist-get spec :description))) `((description . ,d)))
     (when-let ((e (plist-get spec :enum))) `((enum . ,(vconcat e))))
     (when-let ((items (plist-get spec :items)))
       `((items . ,(org-agent-tools--schema items))))
     (when-let ((props (plist-get spec :properties)))
       `((properties . ,(mapcar (lambda (p)
                                  (cons (intern (plist-get p :name)) (org-agent-tools--schema p)))
                                props)))))))

(defun org-agent-tools--parameters (args)
  "The JSON text of the object schema for the argument plists ARGS."
  (let ((json-encoding-pretty-print nil))
    (json-encode
     `((type . "object")
       (properties . ,(if args
                          (mapcar (lambda (a) (cons (intern (plist-get a :name))
                                                    (org-agent-tools--schema a)))
                                  args)
                        ;; An empty object, not null.
                        (make-hash-table)))
       (required . ,(vconcat (delq nil (mapcar (lambda (a)
                                                  (unless (plist-get a :optional)
                                                    (plist-get a :name)))
                                                args))))))))

(cl-defun org-agent-define-tool (&key name function description args confirm category)
  "Define the agent tool NAME whose body is the Elisp FUNCTION.
DESCRIPTION tells the LLM what it is for.  ARGS is a list of
argument plists, each (:name NAME :type TYPE :description TEXT), with
optional :enum (allowed values), :items (the schema of array
elements), :properties (of an object) and :optional; TYPE is one of
`string', `number', `integer', `boolean', `array', `object'.
FUNCTION is called with the arguments in that order (nil for one the
LLM left out) and returns a string or a value to print.  With CONFIRM
non-nil the user is asked before each call.  CATEGORY is a free label.
Defining a tool again replaces it.  Return NAME.  An invalid
definition signals `org-agent-config-error'."
  (unless (and (stringp name) (string-match-p "\\`[A-Za-z0-9_-]\\{1,64\\}\\'" name))
    (org-agent-tools--invalid "A tool name is 1 to 64 letters, digits, _ or -, not %S" name))
  (unless (functionp function)
    (org-agent-tools--invalid "Tool %s: :function must be a function" name))
  (unless (and (stringp description) (not (string-empty-p description)))
    (org-agent-tools--invalid "Tool %s: :description must be a non-empty string" name))
  (dolist (a args)
    (unless (and (plist-get a :name) (stringp (plist-get a :name)))
      (org-agent-tools--invalid "Tool %s: every argument needs a :name string, not %S" name a)))
  (let ((parameters (org-agent-tools--parameters args)))
    (puthash name (list :name name :function function :description description
                        :args args :confirm (and confirm t) :category category
                        :parameters parameters)
             org-agent-tools--table))
  name)

(defun org-agent-remove-tool (name)
  "Remove the agent tool NAME defined with `org-agent-define-tool'."
  (remhash name org-agent-tools--table))

(defun org-agent-tools ()
  "The tools defined in Elisp, as plists, sorted by name."
  (sort (hash-table-values org-agent-tools--table)
        (lambda (a b) (string< (plist-get a :name) (plist-get b :name)))))

(defun org-agent-tools-specs ()
  "The declarations the module sends to the LLM, one plist per tool."
  (mapcar (lambda (tool)
            (list :name (plist-get tool :name)
                  :description (plist-get tool :description)
                  :parameters (plist-get tool :parameters)
                  :confirm (plist-get tool :confirm)))
          (org-agent-tools)))

(defun org-agent-tools--read-forms (text)
  "Return the forms of the Elisp TEXT, in order, read and not evaluated.
Signal an error when TEXT does not read as a whole."
  (with-temp-buffer
    (set-syntax-table emacs-lisp-mode-syntax-table)
    (insert text)
    (goto-char (point-min))
    (let (forms)
      (while (progn (forward-comment (buffer-size)) (not (eobp)))
        (push (read (current-buffer)) forms))
      (nreverse forms))))

(defun org-agent-tools--skill-function (args code)
  "Return a function of the arguments named ARGS (strings) whose body is CODE.
CODE is read, not evaluated: it runs when the function is called.
Signal an error when an argument is not a name or CODE does not read."
  (dolist (a args)
    (unless (and (stringp a) (string-match-p "\\`[a-z][a-z0-9_-]*\\'" a)
                 (not (member a '("t" "nil"))))
      (error "Argument %S is not a name" a)))
  (let ((body (org-agent-tools--read-forms code)))
    (unless body (error "The block is empty"))
    ;; Evaluating a `function' form makes the closure; its body is not run.
    (eval `(function (lambda ,(mapcar #'intern args) ,@body)) t)))

(defun org-agent-tools-define-skill-tools (skills)
  "Define the Elisp tools of SKILLS, replacing the skills' tools defined before.
SKILLS are the :active plists of a skills-loaded event; only those of
source `shipped' or `user' define tools, from their :elisp-tools
\(each (:name NAME :args (ARG...) :code TEXT)).  A block that does
not read defines a tool whose calls fail, saying why.  Return the
problems, as strings."
  (let ((table (make-hash-table :test #'equal))
        problems)
    (dolist (skill skills)
      (when (memq (plist-get skill :source) '(shipped user))
        (dolist (tool (plist-get skill :elisp-tools))
          (let* ((name (plist-get tool :name))
                 (args (plist-get tool :args))
                 (made (condition-case err
                           (list :function (org-agent-tools--skill-function
                                            args (plist-get tool :code)))
                         (error
                          (let ((why (format "skill %s: tool %s does not read: %s"
                                             (plist-get skill :name) name
                                             (if (eq (car err) 'end-of-file)
                                                 "a form is not closed"
                                               (error-message-string err)))))
                            (push why problems)
                            (list :error why))))))
            (puthash name
                     (append (list :name name :skill (plist-get skill :name)
                                   :args (mapcar (lambda (a) (list :name a)) args))
                             made)
                     table)))))
    (setq org-agent-tools--skill-table table)
    (nreverse problems)))

(org-agent-actuator-define :call-tool (name args)
  "Call the Elisp tool NAME with the argument plist ARGS.
A skill's tool of that name comes before one of `org-agent-define-tool'."
  (let ((tool (or (gethash name org-agent-tools--skill-table)
                  (gethash name org-agent-tools--table)
                  (org-agent-actuator-fail "no Elisp tool named %s" name))))
    (when-let ((why (plist-get tool :error)))
      (org-agent-actuator-fail "%s" why))
    ;; The arguments arrive as a plist with lowercase keyword keys.
    (let* ((given args)
           (values (mapcar (lambda (a)
                             (plist-get given (intern (concat ":" (downcase (plist-get a :name))))))
                           (plist-get tool :args)))
           (value (apply (plist-get tool :function) values)))
      (list :result (if (stringp value) value (prin1-to-string value))))))

(provide 'org-agent-tools)
;;; org-agent-tools.el ends here
