;;; org-agent-permissions.el --- What the agent may do, in the user's words -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;;; Commentary:

;; `org-agent-permissions' is the user's policy: rules that allow, ask
;; or deny what the model proposes, by tool or actuator verb, by its
;; subject (a file, a command, code) and by where it runs (the chat, a
;; background run, while a skill is in use).  The module judges every
;; proposal with them, after the default policy and beside the skills'
;; gate tables: a deny or an ask always holds, an allow lifts only the
;; default policy's asks, never a wall (writes into buffers, new
;; skills, protected paths, edits after reading untrusted text, Elisp
;; evaluation).  `M-x org-agent-permissions-explain' shows, for an
;; action, every rule that matched and each gate's part.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(org-agent--declare-module-functions)
(declare-function org-entry-get "org" (epom property &optional inherit literal-nil))

(defcustom org-agent-permissions nil
  "The user's rules for what the agent may do, strictest first.
Each rule is (DECISION TOOL [PATTERN...] [:scope SCOPE] [:match
EXAMPLES] [:not-match EXAMPLES] [:reason TEXT]):

DECISION is `allow', `ask' or `deny'.  Among the rules that match
an action, deny wins over ask over allow, whatever their order.

TOOL is a tool (`run_command', `read_file', `write_file',
`list_directory', `eval_elisp', `query_notes'...) or an actuator
verb (`add-headline', `set-todo'...); `*' matches any run of
characters (\"set-*\"), and `_' and `-' are the same.

PATTERNs say which subjects the rule is about: for the file tools
and the edit verbs, globs over the real (resolved) file name
\(\"~/notes/work/**\"); for `run_command', argv prefixes (\"git
log\" matches \"git log -p\", each part of a compound command is
judged on its own); for `eval_elisp', globs over the code.  No
pattern: every use.

SCOPE is `chat', `background' (a skill's run nobody waits for) or
a skill's name as a string (while that skill is in use).

EXAMPLES (a string or a list) are subjects the rule must, and must
not, match; they are checked when the rules load and a rule whose
examples fail is an error, so a pattern says what you meant.

`run_command' and `eval_elisp' are offered to the model only when a
rule allows or asks for them; `eval_elisp' asks every time whatever
the rules say.  Path patterns of the file tools also name the
directories they may reach beyond `org-agent-directories'.

Examples:
  ((allow run_command \"make test\" :match \"make test V=1\")
   (deny run_command \"git push\")
   (allow read_file \"~/src/project/**\")
   (allow add-headline \"~/notes/inbox.org\" :scope chat)
   (deny * \"~/notes/archive/**\" :scope background))"
  :type '(repeat (sexp :tag "Rule"))
  :group 'org-agent)

(defvar org-agent-permissions--history nil
  "Actions explained before, for `org-agent-permissions-explain'.")

(defun org-agent-permissions--read-action ()
  "Read an action to explain: a tool or verb, then what it is about."
  (let* ((verbs (mapcar (lambda (k) (substring (symbol-name k) 1))
                        (org-agent--action-names)))
         (tools '("run_command" "read_file" "write_file" "list_directory"
                  "eval_elisp" "query_notes" "read_node" "search_notes"
                  "list_files"))
         (name (completing-read "Explain the rules for (tool or verb): "
                                (append tools verbs) nil nil)))
    (pcase name
      ("run_command"
       `(:type :request :target :tool :name ,name
               :args (:command ,(read-string "Command: "))))
      ((or "read_file" "write_file" "list_directory")
       `(:type :request :target :tool :name ,name
               :args (:path ,(expand-file-name (read-file-name "File: ")))))
      ("eval_elisp"
       `(:type :request :target :emacs :action :eval-elisp
               :code ,(read-string "Code: ")))
      ((pred (lambda (n) (member n verbs)))
       (read-from-minibuffer
        "Action: "
        (format "(:type :request :target :emacs :action :%s :id %S)"
                name (or (and (derived-mode-p 'org-mode) (org-entry-get nil "ID"))
                         "ID"))
        nil t 'org-agent-permissions--history))
      (_ `(:type :request :target :tool :name ,name :args nil)))))

;;;###autoload
(defun org-agent-permissions-explain (action &optional scope)
  "Show what the gates decide about ACTION, and why.
ACTION is an action plist as the model proposes it.  Every rule of
`org-agent-permissions' that matches it is listed with why, then
each gate's part (the default policy, the skills, your rules) and
the decision.  SCOPE is nil (the chat), `background', or a skill's
name in use; with a prefix argument, it is asked for."
  (interactive
   (list (org-agent-permissions--read-action)
         (and current-prefix-arg
              (let ((s (completing-read "Scope (chat, background or a skill): "
                                        '("chat" "background"))))
                (pcase s ("chat" nil) ("background" 'background) (_ s))))))
  (org-agent--require-started)
  (let ((text (org-agent--permissions-explain org-agent-permissions action scope)))
    (if (called-interactively-p 'interactive)
        (with-help-window "*org-agent-permissions*"
          (princ text))
      text)))

(provide 'org-agent-permissions)
;;; org-agent-permissions.el ends here
