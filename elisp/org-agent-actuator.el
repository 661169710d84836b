;;; org-agent-actuator.el --- Run the agent's Emacs actions -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The actuator is the only place where the agent changes Emacs.  It
;; runs a closed vocabulary of actions, each a plist such as
;;
;;   (:type :request :target :emacs :action :set-todo :id "abc" :state "DONE")
;;
;; validates its arguments, performs it through Org's own functions (so
;; hooks, logging and undo behave as if the user had done it), makes
;; each action one undo step, and answers with a result plist
;; (:status :ok|:error :message STRING ...).  It never signals: every
;; failure is an :error result the loop can hand back to the LLM.

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'org-src)
(require 'org-id)
(require 'org-archive)
(require 'org-refile)
(require 'org-agent-store)
;; Not required: org-agent-skills needs the tools, which need the actuator.  A skill
;; draft is written only once org-agent (which loads them all) runs.
(declare-function org-agent-skills-draft-file "org-agent-skills" (name))
(declare-function org-agent-skills-loaded "org-agent-skills" (name))
(declare-function org-agent-chat-answer-marker "org-agent-chat" (&optional buffer))
(declare-function org-agent-skills-reload "org-agent-skills" (&optional callback))
(defvar org-element-cache-persistent)   ; Org 9.6 and later
(require 'subr-x)
(require 'cl-lib)
(org-agent--declare-module-functions)

;;;; Defining and running actions

(defcustom org-agent-actuator-save-after-edit t
  "When non-nil, save an Org buffer the agent edited, if it had no unsaved changes.
A buffer with unsaved changes of the user's is never saved by the
agent.  The store sees the edit either way, and the edit stays one
undo step in the buffer."
  :type 'boolean
  :group 'org-agent-actions)

;; The verbs themselves are declared once, in the module's table (src/action/verbs.rs):
;; what each does, its arguments and their types, whether it edits Org.  Here each gets
;; its body, and the table is read from the module (`org-agent--verb-specs') once it is
;; loaded, which is after this file: the arguments are checked, and the previews chosen,
;; from the table.

(defvar org-agent-actuator--actions (make-hash-table :test #'eq)
  "Action keyword → (ARGS . FUNCTION), as `org-agent-actuator-define' made them.")

(defmacro org-agent-actuator-define (action args &rest body)
  "Give the Emacs ACTION (a keyword) its BODY, which sees ARGS bound.
The module's table of verbs declares ACTION: what it does, the types
of its arguments, whether it edits Org.  ARGS names the arguments
BODY sees, each bound to its checked value: a symbol, or a list
\(NAME TYPE [optional]) whose type must then be the table's.  BODY
may start with a docstring that says how it is done; it returns a
plist of extra result data (or nil).  A body whose ARGS are not the
table's, or for an action the table lacks, is an error when it runs
\(see `org-agent-actuator--definition-problem')."
  (declare (indent 2) (doc-string 3))
  (let* ((plist (make-symbol "plist"))
         (doc (and (stringp (car body)) (cdr body) (car body)))
         (forms (if doc (cdr body) body)))
    `(puthash ,action
              (cons ',args
                    (lambda (,plist)
                      ,@(and doc (list doc))
                      (let ,(mapcar (lambda (arg)
                                      (let ((name (if (consp arg) (car arg) arg)))
                                        `(,name (plist-get ,plist ,(intern (format ":%s" name))))))
                                    args)
                        ,@forms)))
              org-agent-actuator--actions)))

(defvar org-agent-actuator--verbs nil
  "The module's table of verbs, as `org-agent--verb-specs' returned it once.")

(defun org-agent-actuator--verbs ()
  "Return the module's table of verbs, an alist (ACTION . ROW).
See `org-agent-actuator--verb' for a ROW."
  (or org-agent-actuator--verbs
      (setq org-agent-actuator--verbs (org-agent--verb-specs))))

(defun org-agent-actuator--verb (action)
  "Return the module's row for ACTION: (:args SPECS :edits EDITS :doc DOC), or nil.
SPECS is a list of (NAME TYPE [optional]); EDITS says how ACTION
changes the Org files: nil, `in-place', `move', `new-file' or
`unknown'."
  (cdr (assq action (org-agent-actuator--verbs))))

(defun org-agent-actuator--definition-problem (action)
  "Return why ACTION's body and the module's row for it disagree, or nil."
  (let ((row (org-agent-actuator--verb action))
        (entry (gethash action org-agent-actuator--actions)))
    (cond
     ((and (null row) (null entry)) nil)
     ((null entry)
      (format "%s is a verb of the module that has no body (org-agent-actuator-define)"
              action))
     ((null row)
      (format "%s has a body but is no verb of the module" action))
     (t
      (let* ((specs (plist-get row :args))
             (names (lambda (args)
                      (sort (mapcar (lambda (a) (symbol-name (if (consp a) (car a) a))) args)
                            #'string<))))
        (cond
         ((not (equal (funcall names (car entry)) (funcall names specs)))
          (format "%s: its body binds %s, but the module's verb takes %s"
                  action (funcall names (car entry)) (funcall names specs)))
         ((seq-find (lambda (a) (and (consp a) (not (equal a (assq (car a) specs)))))
                    (car entry))
          (format "%s: its body declares %S, but the module's verb has %S"
                  action (car entry) specs))))))))

(defun org-agent-actuator--vocabulary-problems ()
  "Return the disagreements of the module's verbs and the bodies here.
A list of messages, nil when every verb of the module has a body
binding its arguments, and every body is that of a verb of the module."
  (let ((actions (mapcar #'car (org-agent-actuator--verbs))))
    (maphash (lambda (action _) (unless (memq action actions) (push action actions)))
             org-agent-actuator--actions)
    (delq nil (mapcar #'org-agent-actuator--definition-problem actions))))

(defun org-agent-actuator-fail (format-string &rest args)
  "Signal an action error with a message made from FORMAT-STRING and ARGS."
  (signal 'org-agent-action-error (list (apply #'format format-string args))))

(defun org-agent-actuator--check (action specs plist)
  "Check PLIST's arguments against SPECS for ACTION; signal on the first problem."
  (dolist (spec specs)
    (pcase-let* ((`(,name ,type ,optional) spec)
                 (key (intern (format ":%s" name)))
                 (value (plist-get plist key)))
      (cond
       ((null value)
        (unless optional (org-agent-actuator-fail "%s: %s is missing" action key)))
       ((eq type 'string)
        (unless (stringp value)
          (org-agent-actuator-fail "%s: %s must be a string, not %S" action key value)))
       ((eq type 'strings)
        (unless (and (proper-list-p value) (seq-every-p #'stringp value))
          (org-agent-actuator-fail "%s: %s must be a list of strings, not %S" action key value)))
       ((eq type 'plist)
        (unless (and (proper-list-p value) (cl-evenp (length value)))
          (org-agent-actuator-fail "%s: %s must be a plist, not %S" action key value)))
       ((eq type 'pairs)
        (unless (and (proper-list-p value)
                     (seq-every-p (lambda (p) (and (consp p) (stringp (car p)) (stringp (cdr p))))
                                  value))
          (org-agent-actuator-fail "%s: %s must be an alist of strings, not %S"
                                    action key value)))))))

(defun org-agent-actuator-run (action)
  "Run the Emacs ACTION plist and return a result plist.
The result has :status (:ok or :error) and :message, plus data the
action returns.  Unknown actions and bad arguments are :error results."
  (condition-case err
      (progn
        (unless (and (proper-list-p action) (eq (plist-get action :type) :request)
                     (eq (plist-get action :target) :emacs))
          (org-agent-actuator-fail "not an Emacs action request: %S" action))
        (let* ((name (plist-get action :action))
               (entry (gethash name org-agent-actuator--actions)))
          (unless (or entry (org-agent-actuator--verb name))
            (org-agent-actuator-fail "unknown Emacs action %S" name))
          (let ((problem (org-agent-actuator--definition-problem name)))
            (when problem (org-agent-actuator-fail "%s" problem)))
          (org-agent-actuator--check name (plist-get (org-agent-actuator--verb name) :args)
                                     action)
          ;; Edits write Org's log inside their undo step; this catches any other
          ;; action's (an Elisp tool that calls `org-todo', say).
          (let* ((data (org-agent-actuator--logging-now
                        (lambda () (funcall (cdr entry) action))))
                 (said (plist-get data :message))
                 (done (format "%s done" (string-remove-prefix ":" (symbol-name name)))))
            ;; An action's own :message (what was answered for it, say) follows the verdict.
            (when said (setq data (org-plist-delete (copy-sequence data) :message)))
            (append (list :status :ok :message (if said (format "%s: %s" done said) done))
                    data))))
    (org-agent-action-error (list :status :error :message (cadr err)))
    (error (list :status :error :message (error-message-string err)))))

;;;; Finding nodes and editing safely

(defvar org-agent-actuator--preview nil
  "During a preview: a cons (ORIGINAL . COPY) once an edit picked its buffer.
The edit then happens in COPY, a scratch copy of ORIGINAL, which is
what `org-agent-actuator-preview' compares.")

(defun org-agent-actuator--edit-buffer (buffer)
  "BUFFER, or during a preview a scratch copy of it to edit instead."
  (if (not org-agent-actuator--preview)
      buffer
    (let ((text (with-current-buffer buffer (org-agent--buffer-text)))
          (copy (generate-new-buffer " *org-agent-preview*")))
      (with-current-buffer copy
        (insert text)
        ;; Org's own setup (#+TODO lines and all) without the user's mode hooks, nor
        ;; Org 9.6's persisted element cache: a scratch copy has nothing to persist, and
        ;; hashing one with raw bytes makes org-persist ask for a coding system.
        (let ((org-element-cache-persistent nil))
          (delay-mode-hooks (org-mode)))
        (goto-char (point-min))
        (set-buffer-modified-p nil))
      (setq org-agent-actuator--preview (cons buffer copy))
      copy)))

(defun org-agent-actuator-node-buffer (node)
  "Return the buffer of NODE's file, refusing one that changed on disk."
  (let* ((file (plist-get node :file))
         (buffer (or (get-file-buffer file)
                     (and (file-exists-p file) (find-file-noselect file))
                     (get-buffer file))))
    (unless buffer
      (org-agent-actuator-fail "the file of node %s is gone: %s" (plist-get node :id) file))
    (with-current-buffer buffer
      (when (and buffer-file-name (not (verify-visited-file-modtime buffer)))
        (org-agent-actuator-fail
         "%s changed on disk since it was visited; revert it before the agent edits it"
         (buffer-name))))
    (org-agent-actuator--edit-buffer buffer)))

(defun org-agent-actuator-goto (node)
  "Move point to NODE's headline in the current buffer; signal if it is not found."
  (widen)
  (let ((id (plist-get node :id))
        (title (plist-get node :title))
        (props (plist-get node :properties)))
    (goto-char (min (max (plist-get node :begin) (point-min)) (point-max)))
    (unless (and (org-at-heading-p)
                 (equal (org-get-heading t t t t) title))
      ;; The buffer moved on since the store last saw it: find the headline again.
      (goto-char (point-min))
      (let ((pos (if (assoc "ID" props)
                     (org-find-property "ID" id)
                   (ignore-errors
                     (org-find-olp (append (org-agent-outline-path id) (list title)) t)))))
        (unless pos
          (org-agent-actuator-fail "node %s (%s) is no longer in %s" id title (buffer-name)))
        (goto-char pos)))))

(defmacro org-agent-actuator-one-step (&rest body)
  "Run BODY in the current buffer as one undo step; return BODY's value.
Point and restriction are restored.  If BODY fails, its changes are
undone; if it succeeds, the store is brought up to date (see
`org-agent-actuator--after-edit')."
  (declare (indent 0) (debug t))
  (let ((group (make-symbol "group")) (done (make-symbol "done"))
        (was-modified (make-symbol "was-modified")) (value (make-symbol "value")))
    `(let ((,was-modified (buffer-modified-p))
           (,group (progn
                     ;; Its own undo step: apart from the user's last edit (the
                     ;; boundary comes before the group, or amalgamating the group
                     ;; would swallow it) and the next.
                     (undo-boundary)
                     (prepare-change-group)))
           ,done ,value)
       (save-excursion
         (save-restriction
           (unwind-protect
               (progn
                 (activate-change-group ,group)
                 (setq ,value (org-agent-actuator--logging-now (lambda () ,@body)))
                 (setq ,done t))
             (if ,done
                 (progn (accept-change-group ,group)
                        (undo-amalgamate-change-group ,group)
                        (undo-boundary))
               (cancel-change-group ,group)))))
       (when ,done (org-agent-actuator--after-edit ,was-modified))
       ,value)))

(defcustom org-agent-ensure-ids nil
  "Non-nil: every note the agent edits gets an :ID: if it has none.
The id is made by `org-id-get-create', in the same undo step as the
edit, before it (so a refiled or archived note carries it along).
The ids skill (skills/ids/SKILL.org) relies on it for \"every note
the agent touches has an id\"."
  :type 'boolean
  :group 'org-agent-actions)

(defmacro org-agent-actuator--at-node (id &rest body)
  "Run BODY at the headline of node ID as one undo step; return BODY's value."
  (declare (indent 1) (debug t))
  (let ((node (make-symbol "node")))
    `(let ((,node (or (org-agent-node ,id)
                      (org-agent-actuator-fail "no node with id %s" ,id))))
       (with-current-buffer (org-agent-actuator-node-buffer ,node)
         (org-agent-actuator-one-step
           (org-agent-actuator-goto ,node)
           ;; Before BODY, so a refile or an archive carries the id along.
           (when org-agent-ensure-ids (org-id-get-create))
           ,@body)))))

(defun org-agent-actuator--body-region ()
  "Return (BEG . END) of the body of the entry at point.
The body starts after the planning line and drawers."
  (save-excursion
    (org-back-to-heading t)
    (let ((end (save-excursion (outline-next-heading) (point))))
      (org-end-of-meta-data t)
      (cons (min (point) end) end))))

(defun org-agent-actuator--after-edit (was-modified)
  "Bring the store up to date after an edit of the current buffer.
Save it first when `org-agent-actuator-save-after-edit' and it was
not WAS-MODIFIED before the edit.  A preview's copy stays as it is."
  (unless org-agent-actuator--preview
    (let ((saved (and org-agent-actuator-save-after-edit (not was-modified) buffer-file-name
                      (progn (save-buffer) t))))
      ;; With `org-agent-mode' on, the save's own hook has re-ingested the buffer:
      ;; a second copy of the whole text would only make garbage.
      (unless (and saved (org-agent-actuator--save-ingests-p))
        (org-agent-ingest-buffer nil t)))))

(defun org-agent-actuator--save-ingests-p ()
  "Non-nil when saving the current buffer re-ingests it (`org-agent--after-save')."
  (or (memq #'org-agent--after-save after-save-hook)
      (and (memq t after-save-hook)
           (memq #'org-agent--after-save (default-value 'after-save-hook)))))

;;;; Org's log notes

(defun org-agent-actuator--logging-now (fn)
  "Call FN, write at once any log entry Org set up meanwhile; return FN's value.
Org logs state changes, repeats and reschedules (`org-log-done',
`org-log-repeat', `org-todo-log-states', `org-log-reschedule'...)
from `post-command-hook': `org-add-log-note' deletes the other
windows, shows the Org buffer and prompts for a note.  An agent's
edit runs from a process filter, outside any command of the user's,
so that prompt would take over the user's next command and window
\(and after a preview, point into a scratch copy already killed).
So the entry is written here, inside the edit (its undo step, its
preview), as Org writes it when no note text is given: the log line
with its time stamp; an agent has no note to add.  Org's pending-note
state is let-bound, so a note Org was about to ask the user for
stays pending, untouched."
  (let ((hooked (memq #'org-add-log-note (default-value 'post-command-hook)))
        (org-log-setup nil)
        (org-log-note-marker (make-marker))
        (org-log-note-return-to (make-marker))
        (org-log-note-purpose nil)
        (org-log-note-state nil)
        (org-log-note-previous-state nil)
        (org-log-note-how nil)
        (org-log-note-extra nil)
        (org-log-note-effective-time nil)
        (org-log-note-window-configuration nil)
        (org-log-post-message nil))
    (unwind-protect
        (prog1 (funcall fn)
          (when-let ((buffer (and org-log-setup (marker-buffer org-log-note-marker))))
            ;; Unmodified with the entry still to write: whatever logged it (an Elisp
            ;; tool) saved the buffer since, and the entry belongs in that save.
            (let ((saved (and (buffer-file-name buffer) (not (buffer-modified-p buffer)))))
              (org-agent-actuator--store-log-entry)
              (when (and saved (buffer-live-p buffer) (buffer-modified-p buffer))
                (with-current-buffer buffer
                  (let ((inhibit-message t)) (save-buffer))
                  (unless (org-agent-actuator--save-ingests-p)
                    (org-agent-ingest-buffer nil t)))))))
      (unless hooked (remove-hook 'post-command-hook #'org-add-log-note))
      (set-marker org-log-note-marker nil)
      (set-marker org-log-note-return-to nil))))

(defun org-agent-actuator--store-log-entry (&optional text)
  "Write the log entry Org set up, with note TEXT (or none) and no window change."
  ;; `org-store-log-note' restores this configuration when done: the one we have.
  (let ((org-log-note-window-configuration (current-window-configuration))
        (inhibit-message t))
    (move-marker org-log-note-return-to (point))
    (save-current-buffer
      ;; It reads the note from the current buffer and kills that buffer.
      (with-temp-buffer
        (when text (insert text))
        (org-store-log-note)))))

;;;; The vocabulary

(defun org-agent-actuator--answer-area (buffer-name)
  "The chat buffer named BUFFER-NAME, if its answer is being written now.
Signal otherwise: display actions write only into the answer area of
an org-agent chat during a turn, never into a note buffer (whose next
save would keep the text) and never after the chat's \"* You\"."
  (let ((buffer (get-buffer buffer-name)))
    (unless (and buffer
                 (with-current-buffer buffer (derived-mode-p 'org-agent-chat-mode)))
      (org-agent-actuator-fail "%s is not an org-agent chat buffer" buffer-name))
    (unless (org-agent-chat-answer-marker buffer)
      (org-agent-actuator-fail "%s has no answer being written" buffer-name))
    buffer))

(defun org-agent-actuator--neutral-text (text at-line-start)
  "TEXT with every line that Org would read as a heading or keyword comma-escaped.
As in Org's source blocks, \"* You\" becomes \",* You\", so nothing
written reads back as a turn of the user's.  AT-LINE-START says whether
TEXT's first line begins a line of the buffer."
  (if at-line-start
      (org-escape-code-in-string text)
    ;; A guard character: the first line continues a line, it begins none.
    (substring (org-escape-code-in-string (concat "x" text)) 1)))

(defun org-agent-actuator--write-answer (buffer-name text)
  "Write TEXT, neutralised, where the answer grows in the chat BUFFER-NAME."
  (with-current-buffer (org-agent-actuator--answer-area buffer-name)
    (save-excursion
      (goto-char (org-agent-chat-answer-marker))
      (insert (org-agent-actuator--neutral-text text (bolp))))))

(org-agent-actuator-define :insert (buffer text)
  "Insert TEXT where the answer grows in the chat BUFFER.
Any other buffer is refused; see `org-agent-actuator--answer-area'."
  (org-agent-actuator--write-answer buffer text)
  nil)

(org-agent-actuator-define :stream-append (buffer text)
  "Append a streamed piece TEXT where the answer grows in the chat BUFFER.
Any other buffer is refused; see `org-agent-actuator--answer-area'."
  (org-agent-actuator--write-answer buffer text)
  nil)

(org-agent-actuator-define :message (text)
  "Show TEXT in the echo area."
  (message "%s" text)
  nil)

(defconst org-agent-actuator--org-answers
  '(("repeater intervals were not enough to shift date past today" . t))
  "Questions Org asks in an edit, by a part of their text, with the agent's answer.
`org-auto-repeat-maybe' (Org 9.5 to 9.8) asks the first when a `++'
repeater is still in the past after ten intervals: yes shifts it past
today, which is what `++' means.")

(defun org-agent-actuator--answering (fn)
  "Call FN, answering Org's `y-or-n-p' and `yes-or-no-p' questions itself.
An agent's edit runs from a process filter and must never wait on
the minibuffer: a question of `org-agent-actuator--org-answers' gets
its answer, any other fails the action.  Return (VALUE . ANSWERED),
ANSWERED a sentence on what was answered, or nil."
  (let* ((answered nil)
         (ask (lambda (prompt &rest _)
                (let* ((question (string-trim (substitute-command-keys prompt)))
                       (known (seq-find (lambda (a) (string-search (car a) question))
                                        org-agent-actuator--org-answers)))
                  (unless known
                    (org-agent-actuator-fail
                     "Org asked %S, which an agent's edit cannot answer" question))
                  (push (format "Org asked %S, answered %s" question
                                (if (cdr known) "yes" "no"))
                        answered)
                  (cdr known)))))
    (cl-letf (((symbol-function 'y-or-n-p) ask)
              ((symbol-function 'yes-or-no-p) ask))
      (let ((value (funcall fn)))
        (cons value (and answered (string-join (nreverse answered) "; ")))))))

(org-agent-actuator-define :set-todo (id state)
  "Set the TODO state of node ID to STATE (nil: no state), through `org-todo'."
  (org-agent-actuator--at-node id
    (when (and state (not (member state org-todo-keywords-1)))
      (org-agent-actuator-fail "%S is not a TODO keyword of %s (those are %s)"
                                state (buffer-name) (string-join org-todo-keywords-1 " ")))
    (let ((answered (cdr (org-agent-actuator--answering
                          (lambda () (org-todo (or state 'none)))))))
      (append (list :id id :todo (org-get-todo-state))
              (and answered (list :message answered))))))

(org-agent-actuator-define :set-property (id key value)
  "Set property KEY of node ID to VALUE."
  (org-agent-actuator--at-node id (org-set-property key value) (list :id id)))

(org-agent-actuator-define :delete-property (id key)
  "Delete property KEY of node ID."
  (org-agent-actuator--at-node id
    (unless (org-entry-get nil key)
      (org-agent-actuator-fail "node %s has no property %s" id key))
    (org-delete-property key)
    (list :id id)))

(org-agent-actuator-define :set-tags (id tags)
  "Set the tags of node ID to TAGS."
  (org-agent-actuator--at-node id (org-set-tags tags) (list :id id :tags (org-get-tags nil t))))

(defun org-agent-actuator--date (date)
  "Check that DATE is something `org-schedule' understands; return it."
  (when (and date (not (string-match-p "\\`[0-9]\\{4\\}-[0-9]\\{2\\}-[0-9]\\{2\\}" date)))
    (org-agent-actuator-fail "date %S must start with YYYY-MM-DD" date))
  date)

(org-agent-actuator-define :schedule (id date)
  "Schedule node ID on DATE (nil: remove the schedule)."
  (org-agent-actuator--date date)
  (org-agent-actuator--at-node id
    (if date (org-schedule nil date) (org-schedule '(4)))
    (list :id id :scheduled (org-entry-get nil "SCHEDULED"))))

(org-agent-actuator-define :deadline (id date)
  "Set the deadline of node ID to DATE (nil: remove it)."
  (org-agent-actuator--date date)
  (org-agent-actuator--at-node id
    (if date (org-deadline nil date) (org-deadline '(4)))
    (list :id id :deadline (org-entry-get nil "DEADLINE"))))

(defun org-agent-actuator--text-block (text)
  "TEXT ending in exactly one newline (empty text stays empty)."
  (if (string-empty-p text) "" (concat (string-trim-right text "[\n]+") "\n")))

(org-agent-actuator-define :replace-body (id body)
  "Replace the body of node ID (after its planning and drawers) with BODY."
  (org-agent-actuator--at-node id
    (pcase-let ((`(,beg . ,end) (org-agent-actuator--body-region)))
      (delete-region beg end)
      (goto-char beg)
      (insert (org-agent-actuator--text-block body)))
    (list :id id)))

(org-agent-actuator-define :append-body (id text)
  "Append TEXT to the body of node ID."
  (org-agent-actuator--at-node id
    (pcase-let ((`(,_ . ,end) (org-agent-actuator--body-region)))
      (goto-char end)
      (unless (bolp) (insert "\n"))
      (insert (org-agent-actuator--text-block text)))
    (list :id id)))

(defun org-agent-actuator--headline-text (level title todo tags)
  "The headline line at LEVEL with TITLE, TODO keyword and TAGS."
  (concat (make-string level ?*) " "
          (if todo (concat todo " ") "")
          title
          (if tags (concat " :" (string-join tags ":") ":") "")
          "\n"))

(defun org-agent-actuator--fill-new-headline (properties body)
  "At a new headline, set PROPERTIES and insert BODY."
  (dolist (p properties) (org-set-property (car p) (cdr p)))
  (when (and body (not (string-empty-p body)))
    (pcase-let ((`(,_ . ,end) (org-agent-actuator--body-region)))
      (goto-char end)
      (unless (bolp) (insert "\n"))
      (insert (org-agent-actuator--text-block body)))))

(org-agent-actuator-define :add-headline (title file parent todo tags properties body)
  "Add a headline TITLE under node PARENT, or at the end of FILE."
  (when (eq (null file) (null parent))
    (org-agent-actuator-fail "add-headline: give exactly one of :file and :parent"))
  (when (string-match-p "\n" title)
    (org-agent-actuator-fail "add-headline: a title is one line"))
  (if parent
      (org-agent-actuator--at-node parent
        (let ((level (1+ (org-current-level))))
          (org-end-of-subtree t t)
          (unless (bolp) (insert "\n"))
          (insert (org-agent-actuator--headline-text level title todo tags))
          (forward-line -1)
          (org-agent-actuator--fill-new-headline properties body)
          (list :parent parent)))
    (let ((buffer (org-agent-actuator--edit-buffer (find-file-noselect (expand-file-name file)))))
      (with-current-buffer buffer
        (unless (derived-mode-p 'org-mode)
          (org-agent-actuator-fail "%s is not an Org file" file))
        (org-agent-actuator-one-step
          (widen)
          (goto-char (point-max))
          (unless (bolp) (insert "\n"))
          (insert (org-agent-actuator--headline-text 1 title todo tags))
          (forward-line -1)
          (org-agent-actuator--fill-new-headline properties body)
          (list :file (expand-file-name file)))))))

(org-agent-actuator-define :visit-node (id)
  "Show node ID to the user."
  (let* ((node (or (org-agent-node id) (org-agent-actuator-fail "no node with id %s" id)))
         (buffer (org-agent-actuator-node-buffer node)))
    (unless org-agent-actuator--preview (pop-to-buffer buffer))
    (org-agent-actuator-goto node)
    (org-agent--show-context 'link-search)
    (list :id id)))

;;;; Moving, archiving, linking and noting

(defun org-agent-actuator--node-or-fail (id)
  "The store's node ID as a plist; signal when there is none."
  (or (org-agent-node id) (org-agent-actuator-fail "no node with id %s" id)))

(defun org-agent-actuator--one-step-in (buffers fn)
  "Call FN as one undo step in each of BUFFERS; return FN's value.
For edits that change two buffers at once (a refile, an archive):
one change group spans them, so a failure undoes both, and each
buffer gets a single undo step.  Each buffer is then saved and
ingested as `org-agent-actuator--after-edit' says."
  (let* ((buffers (delete-dups (delq nil (copy-sequence buffers))))
         (was-modified (mapcar (lambda (b) (cons b (buffer-modified-p b))) buffers))
         (group (progn
                  ;; Before the group: see `org-agent-actuator-one-step'.
                  (dolist (b buffers) (with-current-buffer b (undo-boundary)))
                  (apply #'nconc (mapcar #'prepare-change-group buffers))))
         done value)
    (unwind-protect
        (save-current-buffer
          (activate-change-group group)
          (setq value (org-agent-actuator--logging-now fn))
          (setq done t))
      (if done
          (progn (accept-change-group group)
                 (undo-amalgamate-change-group group)
                 (dolist (b buffers) (with-current-buffer b (undo-boundary))))
        (cancel-change-group group)))
    (dolist (b buffers)
      (when (buffer-live-p b)
        (with-current-buffer b (org-agent-actuator--after-edit (cdr (assq b was-modified))))))
    value))

(defmacro org-agent-actuator--quietly (&rest body)
  "Run BODY without the user's kill ring, clipboard or echo area.
`org-refile' and `org-archive-subtree' cut the subtree as a kill."
  (declare (indent 0) (debug t))
  `(let ((kill-ring nil) (kill-ring-yank-pointer nil)
         (interprogram-cut-function nil) (inhibit-message t))
     ,@body))

(defun org-agent-actuator--existing-org-file (file)
  "FILE expanded, or signal when it is not an existing Org file."
  (let ((path (expand-file-name file)))
    (unless (and (string-suffix-p ".org" path) (file-regular-p path))
      (org-agent-actuator-fail "%s is not an existing Org file" file))
    path))

(defun org-agent-actuator--refile-location (id target-id target-file)
  "The RFLOC `org-refile' takes to move node ID under TARGET-ID or to TARGET-FILE.
A node: (TITLE FILE nil MARKER) at its headline; a file: (NAME FILE
nil nil), its top level."
  (when (eq (null target-id) (null target-file))
    (org-agent-actuator-fail "refile: give exactly one of :target-id and :target-file"))
  (when (equal id target-id)
    (org-agent-actuator-fail "refile: a node cannot go under itself"))
  (if target-id
      (let ((target (org-agent-actuator--node-or-fail target-id)))
        (with-current-buffer (org-agent-actuator-node-buffer target)
          (save-excursion
            (save-restriction
              (org-agent-actuator-goto target)
              (list (org-get-heading t t t t) (buffer-file-name) nil (point-marker))))))
    (let ((path (org-agent-actuator--existing-org-file target-file)))
      (list (file-name-nondirectory path) path nil nil))))

(defun org-agent-actuator--location-buffer (rfloc)
  "The buffer the refile location RFLOC is in (visiting its file if need be)."
  (if (markerp (nth 3 rfloc))
      (marker-buffer (nth 3 rfloc))
    (or (find-buffer-visiting (nth 1 rfloc)) (find-file-noselect (nth 1 rfloc)))))

(org-agent-actuator-define :refile (id target-id target-file)
  "Move node ID and its subtree under node TARGET-ID, or to TARGET-FILE's top.
Through `org-refile', so its ID, its subtree and `org-log-refile' go
as when the user refiles; both buffers change in one undo step."
  (let* ((node (org-agent-actuator--node-or-fail id))
         (source (org-agent-actuator-node-buffer node))
         (rfloc (org-agent-actuator--refile-location id target-id target-file)))
    (org-agent-actuator--one-step-in
     (list source (org-agent-actuator--location-buffer rfloc))
     (lambda ()
       (with-current-buffer source
         (save-excursion
           (save-restriction
             (org-agent-actuator-goto node)
             (org-agent-actuator--quietly (org-refile nil nil rfloc)))))
       (list :id id :target (or target-id (nth 1 rfloc)))))))

(defun org-agent-actuator--archive-location ()
  "Where `org-archive-subtree' puts the entry at point: (FILE . HEADING)."
  (let ((location (org-archive--compute-location
                   (or (org-entry-get nil "ARCHIVE" 'inherit) org-archive-location))))
    (cons (if (org-string-nw-p (car location)) (expand-file-name (car location)) buffer-file-name)
          (cdr location))))

(org-agent-actuator-define :archive (id)
  "Archive node ID with `org-archive-subtree', where `org-archive-location' says.
The node's buffer and the archive's change in one undo step."
  (let* ((node (org-agent-actuator--node-or-fail id))
         (source (org-agent-actuator-node-buffer node))
         (location (with-current-buffer source
                     (save-excursion (save-restriction
                                       (org-agent-actuator-goto node)
                                       (org-agent-actuator--archive-location)))))
         (archive (or (find-buffer-visiting (car location))
                      (find-file-noselect (car location)))))
    (org-agent-actuator--one-step-in
     (list source archive)
     (lambda ()
       (with-current-buffer source
         (save-excursion
           (save-restriction
             (org-agent-actuator-goto node)
             (org-agent-actuator--quietly (org-archive-subtree)))))
       (list :id id :archive (car location) :heading (cdr location))))))

(defun org-agent-actuator--id-get-create ()
  "The ID of the entry at point, made by `org-id-get-create' if it has none.
A preview's scratch copy visits no file, so there the ID is written
but not registered in `org-id-locations'."
  (if org-agent-actuator--preview
      (or (org-entry-get nil "ID")
          (let ((new (org-id-new))) (org-entry-put nil "ID" new) new))
    (org-id-get-create)))

(org-agent-actuator-define :ensure-id (id)
  "Give node ID an :ID: property if it has none, with `org-id-get-create'.
ID may be the store's own id of a node without one."
  (org-agent-actuator--at-node id
    (list :id id :org-id (org-agent-actuator--id-get-create))))

(org-agent-actuator-define :insert-link (id target-id description)
  "Append an id: link to node TARGET-ID at the end of node ID's body.
The link's text is DESCRIPTION, or the target's title.  A target
without an :ID: gets one (`org-id-get-create'), in the same undo
step; a preview does not touch the target and shows the link to a
new ID."
  (let* ((target (org-agent-actuator--node-or-fail target-id))
         (node (org-agent-actuator--node-or-fail id))
         (known (cdr (assoc "ID" (plist-get target :properties))))
         (target-buffer (unless (or known org-agent-actuator--preview)
                          (org-agent-actuator-node-buffer target)))
         (source (org-agent-actuator-node-buffer node)))
    (org-agent-actuator--one-step-in
     (list source target-buffer)
     (lambda ()
       (let* ((org-id (or known
                          (and target-buffer
                               (with-current-buffer target-buffer
                                 (save-excursion
                                   (save-restriction
                                     (org-agent-actuator-goto target)
                                     (org-id-get-create)))))
                          (concat "NEW-ID-FOR-" target-id)))
              (link (org-link-make-string (concat "id:" org-id)
                                          (or description (plist-get target :title)))))
         (with-current-buffer source
           (save-excursion
             (save-restriction
               (org-agent-actuator-goto node)
               (pcase-let ((`(,_ . ,end) (org-agent-actuator--body-region)))
                 (goto-char end)
                 (unless (bolp) (insert "\n"))
                 (insert link "\n")))))
         (list :id id :link link))))))

(org-agent-actuator-define :add-note (id text)
  "Add TEXT to node ID as a note, as `org-add-note' stores one.
Org's own `org-store-log-note' writes it, without the note buffer:
\"- Note taken on [TIME] \\\\\" and the text, where `org-log-beginning'
puts it (the LOGBOOK drawer when `org-log-into-drawer' says so)."
  (when (string-blank-p text)
    (org-agent-actuator-fail "add-note: the note is empty"))
  (org-agent-actuator--at-node id
    (org-add-log-setup 'note)
    (org-agent-actuator--store-log-entry text)
    ;; Stored: nothing is left for `org-agent-actuator--logging-now' to write.
    (setq org-log-setup nil)
    (list :id id)))

;;;; New note files

(defun org-agent-actuator--new-note-file (file)
  "The new note FILE, expanded; signal when it may not be written.
FILE is relative to the first of `org-agent-directories' or absolute;
it must be an .org file inside them that does not exist."
  (let ((dirs (org-agent--directories)))
    (unless dirs
      (org-agent-actuator-fail "create-note: org-agent-directories is not set"))
    (unless (string-suffix-p ".org" file)
      (org-agent-actuator-fail "create-note: %s is not an .org file" file))
    (let ((path (expand-file-name file (car dirs))))
      (unless (seq-some (lambda (dir) (file-in-directory-p path dir)) dirs)
        (org-agent-actuator-fail "create-note: %s is outside org-agent-directories" file))
      (when (file-exists-p path)
        (org-agent-actuator-fail
         "create-note: %s exists, and a new note never replaces a file" path))
      path)))

(defun org-agent-actuator--new-note-text (title filetags body)
  "The text of a new note with TITLE, FILETAGS and BODY."
  (when (string-match-p "\n" title)
    (org-agent-actuator-fail "create-note: a title is one line"))
  (concat "#+TITLE: " title "\n"
          (if filetags (format "#+FILETAGS: :%s:\n" (string-join filetags ":")) "")
          (if (and body (not (string-empty-p body)))
              (concat "\n" (org-agent-actuator--text-block body))
            "")))

(org-agent-actuator-define :create-note (file title filetags body)
  "Write a new Org FILE with TITLE, FILETAGS and BODY, and ingest it.
Never over an existing file, and only inside `org-agent-directories'.
A new file has no undo step: deleting it undoes it."
  (let ((path (org-agent-actuator--new-note-file file))
        (text (org-agent-actuator--new-note-text title filetags body)))
    (make-directory (file-name-directory path) t)
    (let ((coding-system-for-write 'utf-8-unix))
      ;; `excl': a file that appeared meanwhile is not replaced.
      (write-region text nil path nil 'silent nil 'excl))
    (org-agent-ingest-file path)
    (list :file path)))

;;;; Elisp evaluation (eval_elisp)

(defcustom org-agent-eval-timeout 10
  "Most seconds Elisp the agent evaluates (eval_elisp) may run.
The limit stops code that waits (for a process, a timer, input);
code that computes without ever waiting is stopped by \[keyboard-quit].
`eval_elisp' is offered only when `org-agent-permissions' enables it,
and each call is shown and approved."
  :type 'number
  :group 'org-agent-actions)

(defcustom org-agent-eval-result-max-chars 4000
  "Most characters of an evaluated value sent back to the model."
  :type 'natnum
  :group 'org-agent-actions)

(org-agent-actuator-define :eval-elisp (code)
  "Evaluate CODE, one Elisp form, with lexical binding and a time limit.
Returns the printed value, cut to `org-agent-eval-result-max-chars'."
  (let* ((read (condition-case err
                   (read-from-string code)
                 (error (org-agent-actuator-fail "eval-elisp: the code does not read: %s"
                                                  (error-message-string err)))))
         (form (car read)))
    (unless (string-blank-p (substring code (cdr read)))
      (org-agent-actuator-fail
       "eval-elisp: the code is more than one form; wrap several in progn"))
    (let* ((value (with-timeout (org-agent-eval-timeout
                                 (org-agent-actuator-fail
                                  "eval-elisp: stopped after %s seconds" org-agent-eval-timeout))
                    (eval form t)))
           (printed (let ((print-length 200) (print-level 10))
                      (prin1-to-string value))))
      (list :value (if (> (length printed) org-agent-eval-result-max-chars)
                       (concat (substring printed 0 org-agent-eval-result-max-chars) "…")
                     printed)))))

;;;; Skills the agent drafts

(defun org-agent-actuator--new-skill-file (name)
  "Return the file for the skill draft NAME; signal when there may be none.
A draft never replaces a file, nor a skill already loaded under its name."
  (unless (let ((case-fold-search nil))
            (string-match-p "\\`[a-z0-9]+\\(?:-[a-z0-9]+\\)*\\'" name))
    (org-agent-actuator-fail "create-skill: %S is not a kebab-case skill name" name))
  (let ((file (org-agent-skills-draft-file name))
        (loaded (org-agent-skills-loaded name)))
    (when (file-exists-p file)
      (org-agent-actuator-fail "create-skill: %s exists, and a draft never replaces a file"
                                file))
    (when loaded
      (org-agent-actuator-fail "create-skill: a skill named %s is already loaded from %s"
                                name (plist-get loaded :file)))
    file))

(org-agent-actuator-define :create-skill (name text)
  "Write the skill draft TEXT as drafts/NAME/SKILL.org, then load the skills again.
The draft goes to the first of the user's skill directories and
loads with source `agent'."
  (let ((file (org-agent-actuator--new-skill-file name)))
    (make-directory (file-name-directory file) t)
    (let ((coding-system-for-write 'utf-8-unix))
      ;; `excl': a file that appeared meanwhile is not replaced.
      (write-region text nil file nil 'silent nil 'excl))
    (when org-agent--started
      (org-agent-skills-reload))
    (list :file file)))

(defun org-agent-actuator--added-text-diff (old-label new-label text)
  "TEXT, all added, as a diff from OLD-LABEL to NEW-LABEL."
  (let ((lines (split-string (string-remove-suffix "\n" text) "\n")))
    (concat (format "--- %s\n" old-label)
            (format "+++ %s\n" new-label)
            (format "@@ -0,0 +1,%d @@\n" (length lines))
            (mapconcat (lambda (line) (concat "+" line)) lines "\n"))))

(defun org-agent-actuator--checked (action)
  "Signal unless ACTION's arguments fit its definition."
  (let ((name (plist-get action :action)))
    (org-agent-actuator--check name (plist-get (org-agent-actuator--verb name) :args) action)))

(defun org-agent-actuator--preview-new-skill (action)
  "The new skill file of the create-skill ACTION, as a diff against no file.
See `org-agent-actuator-preview'."
  (condition-case err
      (progn
        (org-agent-actuator--checked action)
        (let ((file (org-agent-actuator--new-skill-file (plist-get action :name))))
          (list :diff (org-agent-actuator--added-text-diff
                       "/dev/null" file (plist-get action :text)))))
    (org-agent-action-error (list :error (cadr err)))))

(defun org-agent-actuator--preview-new-note (action)
  "The new note of the create-note ACTION, as a diff against no file."
  (condition-case err
      (progn
        (org-agent-actuator--checked action)
        (let ((file (org-agent-actuator--new-note-file (plist-get action :file))))
          (list :diff (org-agent-actuator--added-text-diff
                       "/dev/null" file
                       (org-agent-actuator--new-note-text
                        (plist-get action :title) (plist-get action :filetags)
                        (plist-get action :body))))))
    (org-agent-action-error (list :error (cadr err)))))

(defun org-agent-actuator--releveled (subtree level)
  "SUBTREE's text with its top headline at LEVEL, its children shifted alike."
  (let ((shift (- level (with-temp-buffer
                          (insert subtree)
                          (goto-char (point-min))
                          (skip-chars-forward "*")
                          (1- (point))))))
    (replace-regexp-in-string
     "^\\(\\*+\\) "
     (lambda (stars)
       (concat (make-string (max 1 (+ (length (match-string 1 stars)) shift)) ?*) " "))
     subtree t t)))

(defun org-agent-actuator--move-destination (action)
  "The destination of the refile or archive ACTION: (LABEL . LEVEL).
Computed at the node's headline, without changing anything."
  (if (eq (plist-get action :action) :archive)
      (pcase-let ((`(,file . ,heading) (org-agent-actuator--archive-location)))
        (cons (if (org-string-nw-p heading)
                  (format "%s, under \"%s\", with the ARCHIVE_ properties org-archive-subtree adds"
                          file heading)
                file)
              (if (org-string-nw-p heading)
                  (1+ (with-temp-buffer (insert heading)
                                        (goto-char (point-min))
                                        (skip-chars-forward "*")
                                        (1- (point))))
                1)))
    (let* ((id (plist-get action :id))
           (target-id (plist-get action :target-id))
           (rfloc (org-agent-actuator--refile-location
                   id target-id (plist-get action :target-file))))
      (if target-id
          (cons (format "%s, under \"%s\"" (nth 1 rfloc) (car rfloc))
                (1+ (with-current-buffer (marker-buffer (nth 3 rfloc))
                      (save-excursion (goto-char (nth 3 rfloc)) (org-current-level)))))
        (cons (nth 1 rfloc) 1)))))

(defun org-agent-actuator--preview-move (action)
  "What the refile or archive ACTION would do, described in both files.
The subtree leaving its file, as a diff, and its text arriving where
it goes; nothing is run, so `org-log-refile' notes and the like are
not shown."
  (condition-case err
      (progn
        (org-agent-actuator--checked action)
        (let* ((node (org-agent-actuator--node-or-fail (plist-get action :id)))
               (buffer (org-agent-actuator-node-buffer node)))
          (with-current-buffer buffer
            (save-excursion
              (save-restriction
                (org-agent-actuator-goto node)
                (let* ((beg (point))
                       (end (save-excursion (org-end-of-subtree t t) (point)))
                       (subtree (buffer-substring-no-properties beg end))
                       (old (org-agent--buffer-text))
                       (new (concat (buffer-substring-no-properties (point-min) beg)
                                    (buffer-substring-no-properties end (point-max))))
                       (destination (org-agent-actuator--move-destination action)))
                  (list :diff (concat
                               (org-agent-actuator--diff
                                (org-agent-actuator--file-label buffer) old new)
                               "\n"
                               (org-agent-actuator--added-text-diff
                                (car destination) (car destination)
                                (org-agent-actuator--releveled subtree
                                                               (cdr destination)))))))))))
    (org-agent-action-error (list :error (cadr err)))
    (error (list :error (error-message-string err)))))

;;;; Previews

(defun org-agent-actuator--diff (name old new)
  "A unified diff of the texts OLD and NEW of file NAME.
One hunk, with 2 lines of context."
  (let* ((a (vconcat (split-string old "\n")))
         (b (vconcat (split-string new "\n")))
         (la (length a)) (lb (length b))
         (pre 0) (suf 0))
    (while (and (< pre la) (< pre lb) (equal (aref a pre) (aref b pre)))
      (setq pre (1+ pre)))
    (while (and (< suf (- la pre)) (< suf (- lb pre))
                (equal (aref a (- la suf 1)) (aref b (- lb suf 1))))
      (setq suf (1+ suf)))
    (if (and (= pre la) (= pre lb))
        ""
      (let* ((from (max 0 (- pre 2)))
             (to-a (min la (+ (- la suf) 2)))
             (to-b (min lb (+ (- lb suf) 2)))
             (lines (list (format "@@ -%d,%d +%d,%d @@" (1+ from) (- to-a from)
                                  (1+ from) (- to-b from))
                          (format "+++ %s" name) (format "--- %s" name))))
        (cl-loop for i from from below pre do (push (concat " " (aref a i)) lines))
        (cl-loop for i from pre below (- la suf) do (push (concat "-" (aref a i)) lines))
        (cl-loop for i from pre below (- lb suf) do (push (concat "+" (aref b i)) lines))
        (cl-loop for i from (- la suf) below to-a do (push (concat " " (aref a i)) lines))
        (mapconcat #'identity (nreverse lines) "\n")))))

(defun org-agent-actuator--file-label (buffer)
  "The name of BUFFER's file for a preview: \"LINK → REAL\" through a link.
A note that is a symbolic link changes the file it leads to, so the
preview names that file; a buffer without a file is named as is."
  (let ((file (buffer-file-name buffer)))
    (if (not file)
        (buffer-name buffer)
      (let ((real (file-truename file)))
        (if (equal real (expand-file-name file))
            file
          (format "%s → %s" file real))))))

(defun org-agent-actuator-preview (action)
  "What the Emacs ACTION would change, without changing anything.
Return (:diff TEXT) with a unified diff of the Org file it edits,
\(:diff \"\") when it edits nothing, or (:error MESSAGE) when it
could not run.  The action runs on a scratch copy of the buffer, with
Org's own functions, so the preview shows what running it would do.
A new skill (create-skill) or note (create-note) shows as its whole
file, added, or as the error that would keep it from being written.
A refile or archive, which changes two files, shows the subtree
leaving its file (a diff) and arriving where it goes (added lines,
labelled with the file and headline).  Only the edit actions
have previews; for others, return nil (an Elisp tool, in particular,
is never run to preview it)."
  (let ((name (plist-get action :action)))
    ;; How the action changes Org is the module's table's to say.
    (pcase (plist-get (org-agent-actuator--verb name) :edits)
      ('in-place (org-agent-actuator--preview-edit action))
      ('move (org-agent-actuator--preview-move action))
      ('new-file (pcase name
                   (:create-skill (org-agent-actuator--preview-new-skill action))
                   (:create-note (org-agent-actuator--preview-new-note action)))))))

(defun org-agent-actuator--preview-edit (action)
  "Run the edit ACTION on a scratch copy; see `org-agent-actuator-preview'."
  (let* ((org-agent-actuator--preview t)
         ;; "Entry repeats: ..." and the like would tell of an edit not made.
         (inhibit-message t)
         (result (unwind-protect
                     (org-agent-actuator-run action)
                   (when (consp org-agent-actuator--preview)
                     (setq org-agent-actuator--preview
                           (list (car org-agent-actuator--preview)
                                 (with-current-buffer (cdr org-agent-actuator--preview)
                                   (prog1 (buffer-string)
                                     (kill-buffer)))))))))
    (cond
     ((eq (plist-get result :status) :error)
      (list :error (plist-get result :message)))
     ((consp org-agent-actuator--preview)
      (pcase-let ((`(,buffer ,new) org-agent-actuator--preview))
        (list :diff (org-agent-actuator--diff
                     (org-agent-actuator--file-label buffer)
                     (with-current-buffer buffer (org-agent--buffer-text))
                     new))))
     (t (list :diff "")))))

;;;; Requests from the loop

(defun org-agent-actuator--handle (event)
  "Run the action of the module's EVENT and send its result back.
An action whose turn was interrupted meanwhile is not run."
  (let ((reply (plist-get event :reply)))
    (when (org-agent--reply-pending-p reply)
      (let ((result (org-agent-actuator-run (plist-get event :action))))
        (condition-case err
            (org-agent--actuated reply result)
          (error
           (org-agent--actuated
            reply (list :status (plist-get result :status)
                        :message (format "%s (its data could not be sent back: %s)"
                                         (plist-get result :message)
                                         (error-message-string err))))))))))

(add-hook 'org-agent-actuate-functions #'org-agent-actuator--handle)

(provide 'org-agent-actuator)
;;; org-agent-actuator.el ends here
