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
(require 'org-agent-tools)
(org-agent--declare-module-functions)

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
\(\"~/notes/work/**\"); for `run_command', a command's words: an
ask or a deny matches every command starting with them (\"git
push\" matches \"git push -f\"), an allow only exactly those words,
or, when it ends with a `*' word, those words and more (\"make
test *\" matches \"make test -j2\"), each added argument still
judged by the defaults: one that names a path outside the working
directory, writes a file or runs code asks.  Each part of a
compound command is judged on its own.  For `eval_elisp', globs
over the code.  No pattern: every use.

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
  ((allow run_command \"make test *\" :match \"make test -j2\")
   (deny run_command \"git push\")
   (allow read_file \"~/src/project/**\")
   (allow add-headline \"~/notes/inbox.org\" :scope chat)
   (deny * \"~/notes/archive/**\" :scope background))"
  :type '(repeat (sexp :tag "Rule"))
  :group 'org-agent-security)

(defconst org-agent-permissions--tools
  '(("query_notes" . "reads the notes") ("read_node" . "reads the notes")
    ("search_notes" . "reads the notes") ("list_files" . "reads the notes")
    ("scan_notes" . "reads the notes (a skill's alias)") ("semantic_search" . "reads the notes")
    ("use_skill" . "reads a skill") ("read_file" . "reads a file")
    ("list_directory" . "reads a directory") ("write_file" . "writes a file")
    ("run_command" . "runs a command") ("eval_elisp" . "evaluates Elisp"))
  "The module's built-in tools (and those offered when enabled), and what they do.")

(defun org-agent-permissions--names ()
  "Tool and verb names to explain, an alist (NAME . WHAT-IT-DOES).
The built-in tools, the Elisp tools defined now (`org-agent-define-tool'
and the skills'), and the module's edit verbs (`org-agent--action-names')."
  (append
   org-agent-permissions--tools
   (mapcar (lambda (spec) (cons (plist-get spec :name) "an Elisp tool"))
           (org-agent-tools-specs))
   (delq nil
         (mapcar (lambda (k)
                   (let ((verb (substring (symbol-name k) 1)))
                     ;; Evaluation is the tool eval_elisp to the model.
                     (unless (equal verb "eval-elisp")
                       (cons verb "edits a note"))))
                 (org-agent--action-names)))))

(defun org-agent-permissions--read-node ()
  "Read a headline of the store with completion; return its store id.
The headline at point is the default in an Org buffer."
  (let ((here (and (derived-mode-p 'org-mode) (ignore-errors (org-agent-node-at-point)))))
    (if (and here (y-or-n-p (format "The headline at point (%s)? "
                                    (plist-get (org-agent-node here) :title))))
        here
      (let ((target (org-agent--read-headline "Node: ")))
        (or (org-agent--node-at (nth 0 target) (nth 1 target))
            (user-error "No node at %s in the store" (nth 0 target)))))))

(defun org-agent-permissions--read-action ()
  "Read an action to explain: a tool or verb with completion, then its subject.
The subject is what the rules' patterns are about: a command line for
`run_command', a file for the file tools, code for `eval_elisp', a
node for an edit verb.  The action is built as the model's call of
that tool is, so the gates judge it as they would the call."
  (let* ((names (org-agent-permissions--names))
         (completion-extra-properties
          (list :annotation-function
                (lambda (n) (let ((what (cdr (assoc n names))))
                              (if what (concat "  " what) "")))))
         (name (completing-read "Explain the rules for (tool or verb): " names nil t nil
                                'org-agent-permissions--history))
         (verbs (mapcar (lambda (k) (substring (symbol-name k) 1)) (org-agent--action-names))))
    (pcase name
      ("run_command"
       `(:type :request :target :tool :name ,name
               :args (:command ,(read-string "Command line: "))))
      ((or "read_file" "write_file")
       `(:type :request :target :tool :name ,name
               :args (:path ,(expand-file-name (read-file-name "File: ")))))
      ("list_directory"
       `(:type :request :target :tool :name ,name
               :args (:path ,(expand-file-name (read-directory-name "Directory: ")))))
      ("eval_elisp"
       `(:type :request :target :emacs :action :eval-elisp
               :code ,(read-string "Code: ")))
      ((pred (lambda (n) (member n verbs)))
       `(:type :request :target :emacs :action ,(intern (concat ":" name))
               :id ,(org-agent-permissions--read-node)))
      (_ `(:type :request :target :tool :name ,name :args nil)))))

;;;###autoload
(defun org-agent-permissions-explain (action &optional scope show)
  "Say what the gates decide about ACTION, and why.
Interactively, a tool or edit verb is read with completion, then what
it is about: a command line, a file, code or a headline.  ACTION is
an action plist as the model proposes it.  Every rule of
`org-agent-permissions' that matches it is listed with why, then each
gate's part (the default policy, the skills, your rules) and the
decision.  SCOPE is nil (the chat), `background', or a skill's name in
use; with a prefix argument, it is asked for.  Return the text; with
SHOW (interactively), show it in a help window."
  (interactive
   (list (org-agent-permissions--read-action)
         (and current-prefix-arg
              (let ((s (completing-read "Scope (chat, background or a skill): "
                                        '("chat" "background"))))
                (pcase s ("chat" nil) ("background" 'background) (_ s))))
         t))
  (org-agent--require-started)
  (let ((text (org-agent--permissions-explain org-agent-permissions action scope)))
    (when show
      (with-help-window "*org-agent-permissions*"
        (princ text)))
    text))

;;;; The shell tool

;; `run_command' is offered only when a rule of `org-agent-permissions' allows or asks it;
;; these options say how its commands run.

(defcustom org-agent-shell-timeout 30
  "Seconds a command the agent runs with `run_command' may take.
When they are up, the command and every process it started (its
process group) are killed, and the agent reads what it printed so
far.  Interrupting the turn (`org-agent-interrupt') kills them too."
  :type 'number
  :group 'org-agent-security)

(defcustom org-agent-shell-output-limit 20000
  "Most bytes of a command's output the agent reads, of stdout and of stderr.
The rest is cut, and the agent is told how much was cut."
  :type 'natnum
  :group 'org-agent-security)

(defvar org-agent-shell--roots nil
  "Directories the agent's commands may run in; nil means `org-agent-directories'.
The first is where commands run unless the agent names another
inside one of them.  The directories the file rules of
`org-agent-permissions' name are added.  The tool is offered only
when a rule of `org-agent-permissions' allows or asks `run_command'.")

(defcustom org-agent-shell-sandbox t
  "Whether the agent's commands run in the kernel's sandbox.
When t (the default), each command of `run_command' runs under
Landlock in namespaces of its own: it sees the notes directories as
the notes layer shows them (private parts absent, secrets redacted,
no version-control history), reads only the system's files and the
directories it may run in, writes only its own /tmp (discarded) and
`org-agent-shell-writable-directories', and has no network unless
`org-agent-shell-network-commands' names it.  Where the kernel offers
no sandbox, commands do not run at all.

nil runs commands without the sandbox: they see the notes and
everything else as the user does.  The chat's header line then says
so."
  :type 'boolean
  :group 'org-agent-security)

(defcustom org-agent-shell-writable-directories nil
  "Directories the agent's commands may write in, inside the sandbox.
Nothing else is writable but a command's own /tmp, which is
discarded when it ends.  Notes directories are never writable: notes
change through the edit tools, which show a diff."
  :type '(repeat directory)
  :group 'org-agent-security)

(defcustom org-agent-shell-network-commands nil
  "Commands that may use the network inside the sandbox, as argv prefixes.
For example (\"git fetch\" \"curl\").  Every other command runs in a
network namespace with no network at all."
  :type '(repeat string)
  :group 'org-agent-security)

(defun org-agent-shell-options ()
  "Return the turn option of the shell tool, or nil when there is no directory."
  (let ((roots (or org-agent-shell--roots org-agent-directories)))
    (and roots
         (list :shell (list :roots (mapcar #'expand-file-name roots)
                            :timeout org-agent-shell-timeout
                            :output-cap org-agent-shell-output-limit
                            :notes (org-agent--directories)
                            :view-dir (expand-file-name
                                       "view" (expand-file-name org-agent-state-directory))
                            :sandbox (if org-agent-shell-sandbox t nil)
                            :writable (mapcar #'expand-file-name
                                              org-agent-shell-writable-directories)
                            :network org-agent-shell-network-commands)))))

(provide 'org-agent-permissions)
;;; org-agent-permissions.el ends here
