;;; org-agent-here.el --- The agent in any buffer: answers and rewrites in place -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Two commands bring the agent to the buffer you are in.
;;
;; `org-agent-here-ask' asks a question from the minibuffer (the
;; region, if active, goes with it) and writes the answer where
;; `org-agent-here-answer-place' says: under a new child heading of the
;; heading at point (Org), at point, or in the chat.  The answer
;; streams between two markers of its own, so text typed elsewhere in
;; the buffer meanwhile is left alone, and the whole answer is one undo
;; step (a change group).  In a child heading, lines of the answer that
;; would be headlines are demoted below the child, so the outline keeps
;; its shape.  `org-agent-here-stop' (or `org-agent-interrupt') stops
;; it: the partial answer stays, with a note saying it was interrupted.
;;
;; `org-agent-here-rewrite' sends the region with an instruction; the
;; proposed replacement streams into a proposal buffer, then shows as a
;; diff.  There C-c C-c accepts it (one undo step, only if the region
;; still holds the text that was sent), C-c C-k rejects it, C-c C-r
;; asks again with a follow-up instruction, and C-c C-e opens ediff.
;;
;; Neither edits your notes through the agent's tools: a rewrite offers
;; the model no tools at all, and an answer may look things up, but an
;; edit it asks for is denied (the model is told), since the answer
;; itself is the edit.  The chat is the place for edits with approval.
;;
;; The answer's undo step is everything done to its buffer from the
;; moment it was asked until it ended: what you type in that buffer
;; meanwhile is undone with it (undo can only take whole steps).  Both
;; commands need a backend: with only the local model, start it first
;; (open the chat).

;;; Code:

(require 'org-agent-base)
(require 'org-agent-dispatch)
(require 'org-agent-store)
(require 'org-agent-backends)
(require 'org-agent-chat)
(require 'org)
(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'diff)
(org-agent--declare-module-functions)

(declare-function ediff-buffers "ediff" (buffer-a buffer-b &optional startup-hooks job-name))

;;;; Options

(defcustom org-agent-here-answer-place 'auto
  "Where `org-agent-here-ask' writes the answer.
`child': in an Org buffer, under a new child heading of the heading
at point, titled from the question, with an ORG_AGENT_MODEL property
naming the backend and model that wrote it.  `point': at point (after
the region, when one is active).  `chat': in the chat, as
`org-agent-ask' does.  `auto': `child' in an Org buffer with a heading
at point, else `point'.  A read-only buffer gets its answers in the
chat.  With a prefix argument the command asks which place to use."
  :type '(choice (const :tag "Child heading in Org, else at point" auto)
                 (const :tag "New child heading (Org)" child)
                 (const :tag "At point" point)
                 (const :tag "In the chat" chat))
  :group 'org-agent-chat)

(defcustom org-agent-here-title-length 60
  "The longest title, in characters, of a child heading made from a question."
  :type 'integer
  :group 'org-agent-chat)

;;;; Jobs

(cl-defstruct (org-agent-here--job (:constructor org-agent-here--job-create)
                                   (:copier nil))
  "One request of this file to the module and what it writes to."
  kind            ; `answer' or `rewrite'
  request         ; the module's request id
  conversation    ; the conversation id of the request
  buffer          ; the buffer written to (the source buffer of a rewrite)
  start end       ; markers around the region written (answer) or rewritten (rewrite)
  tail            ; non-nil when one newline after END belongs to the answer
  group           ; the change group of an answer
  heading         ; marker at the child heading, or nil
  step            ; marker where the text of the backend answering now begins
  prefix          ; stars put before the answer's headline lines ("" for none)
  (pending "")    ; text held back: a line of only stars, not yet complete
  (at-bol t)      ; whether the next text begins a line
  started         ; whether text other than white space has come
  label           ; the backend that answers, as `org-agent-backends-label' says
  state           ; `running', `done', `interrupted', `error', `stopped'
  ;; A rewrite's:
  original        ; the text sent
  instruction     ; the last instruction
  proposal        ; the proposal buffer
  original-buffer ; a buffer holding ORIGINAL, for ediff
  diff            ; the diff buffer
  warnings)       ; how the proposal changes the Org structure, as strings

(defvar org-agent-here--jobs (make-hash-table)
  "Request id → the `org-agent-here--job' it belongs to.")

(defvar-local org-agent-here--rewrite nil
  "In a proposal or diff buffer, the rewrite job it shows.")

;;;; Sending

(defun org-agent-here--conversation ()
  "A fresh conversation id for one request of this file."
  (format "here-%s-%d" (format-time-string "%Y%m%dT%H%M%S") (random 1000000)))

(defun org-agent-here--focus ()
  "The store id of the node at point, or nil."
  (and (derived-mode-p 'org-mode) buffer-file-name
       (ignore-errors (org-agent-node-at-point))))

(defun org-agent-here--backends ()
  "The cascade's backends, or signal a clear error when there is none."
  (or (org-agent-backends-cascade)
      (user-error (if (org-agent-backends-local-p)
                      "The local model is not running yet: open the chat (M-x org-agent-chat) first, or set `org-agent-backends'"
                    "No backend is configured: set `org-agent-backends'"))))

(defun org-agent-here--send (job prompt options)
  "Send PROMPT for JOB with the turn OPTIONS in front of the chat's own.
Return the request id."
  (let* ((backends (org-agent-here--backends))
         (conversation (org-agent-here--conversation))
         (options (append options
                          (and (org-agent-backends-local-p) (list :tool-rounds 0))
                          (org-agent-chat-common-options))))
    (setf (org-agent-here--job-label job) (org-agent-backends-label (car backends))
          (org-agent-here--job-conversation job) conversation)
    (let ((request (org-agent-chat-stimulus prompt conversation backends options)))
      (setf (org-agent-here--job-request job) request
            (org-agent-here--job-state job) 'running)
      (puthash request job org-agent-here--jobs)
      request)))

(defun org-agent-here--redact (text)
  "TEXT, from the current buffer, without its private subtrees."
  (org-agent--redact-private-now
   text (if buffer-file-name (expand-file-name buffer-file-name) (buffer-name))))

(defun org-agent-here--forget (job)
  "Forget JOB's request, its events and its conversation's history."
  (remhash (org-agent-here--job-request job) org-agent-here--jobs)
  (when (fboundp 'org-agent--chat-forget)
    (ignore-errors (org-agent--chat-forget (org-agent-here--job-conversation job)))))

;;;; Asking

(defun org-agent-here--place (place)
  "The place to answer in: PLACE, or the option's, resolved for this buffer."
  (let ((place (or place org-agent-here-answer-place)))
    (cond
     ((eq place 'chat) 'chat)
     ;; Nothing can be written here: the chat takes the answer.
     (buffer-read-only 'chat)
     ((eq place 'auto)
      (if (and (derived-mode-p 'org-mode)
               (not (save-excursion (org-before-first-heading-p))))
          'child
        'point))
     ((eq place 'child)
      (unless (derived-mode-p 'org-mode)
        (user-error "A child heading needs an Org buffer; answer at point instead"))
      (when (save-excursion (org-before-first-heading-p))
        (user-error "Point is not under a heading: no heading to add a child to"))
      'child)
     (t 'point))))

(defun org-agent-here-answer-place-here ()
  "Return where `org-agent-here-ask' would answer from point.
That is `child', `point' or `chat'."
  (condition-case nil
      (org-agent-here--place nil)
    (user-error 'point)))

(defun org-agent-here--read-place ()
  "Ask the user where to put the answer."
  (intern (completing-read "Answer where? " '("child" "point" "chat") nil t nil nil
                           (if (eq org-agent-here-answer-place 'auto)
                               (if (derived-mode-p 'org-mode) "child" "point")
                             (symbol-name org-agent-here-answer-place)))))

(defun org-agent-here--title (question)
  "A heading title made from QUESTION: its first line, shortened."
  (let* ((line (string-trim (car (split-string (string-trim question) "\n"))))
         (line (replace-regexp-in-string "[ \t]+" " " line)))
    (if (> (length line) org-agent-here-title-length)
        (concat (string-trim-right (substring line 0 (1- org-agent-here-title-length))) "…")
      line)))

(defcustom org-agent-here-branching t
  "Whether a question asked inside an Org conversation carries its branch.
An Org buffer holds a conversation where answers of the agent are
headings with an ORG_AGENT_MODEL property.  A question asked under
such a heading (or under its ancestors' children) goes with the path
from the top heading down to the heading at point: each heading and
its own text, oldest first.  Siblings are other branches and are
left out, as are private subtrees."
  :type 'boolean
  :group 'org-agent-chat)

(defun org-agent-here--branch ()
  "The Org conversation the heading at point continues, as Org text, or nil.
The path from the top heading down to the heading at point, each
with its own text but not its children; nil unless one of them is an
answer of the agent (it has ORG_AGENT_MODEL)."
  (when (and org-agent-here-branching (derived-mode-p 'org-mode)
             (not (save-excursion (org-before-first-heading-p))))
    (save-excursion
      (org-back-to-heading t)
      (let (path answered)
        (while (progn
                 (let ((start (point))
                       (end (save-excursion
                              (outline-next-heading)
                              (point))))
                   (when (org-entry-get nil "ORG_AGENT_MODEL")
                     (setq answered t))
                   (push (buffer-substring-no-properties start end) path))
                 (org-up-heading-safe)))
        (when answered
          (org-agent-here--redact
           (mapconcat (lambda (part) (if (string-suffix-p "\n" part) part (concat part "\n")))
                      path "")))))))

(defun org-agent-here--prompt (question selection place)
  "The message sent for QUESTION with SELECTION (text or nil) answered in PLACE."
  (concat
   (when-let ((branch (and (memq place '(child point)) (org-agent-here--branch))))
     (format "This question continues a conversation kept in my Org notes: the path \
from its first heading down to here, oldest first (headings with ORG_AGENT_MODEL are \
your earlier answers; other branches are left out).
-----BEGIN CONVERSATION-----
%s-----END CONVERSATION-----

" branch))
   question
   (and selection
        (format "\n\nThe text I selected in %s:\n-----BEGIN SELECTION-----\n%s%s-----END SELECTION-----"
                (buffer-name) selection (if (string-suffix-p "\n" selection) "" "\n")))
   (pcase place
     ('child "\n\n(Your answer goes into my Org notes as the body of a new heading: \
write Org markup, not Markdown, and no heading line of its own.)")
     ('point (format "\n\n(Your answer is inserted as it is into the buffer %s (%s) \
at point: reply with the text to insert only.)"
                     (buffer-name) (format-mode-line mode-name))))))

;;;###autoload
(defun org-agent-here-ask (question &optional place)
  "Ask the agent QUESTION; the answer comes where you are.
The region, if active, goes with the question.  PLACE (default
`org-agent-here-answer-place') says where the answer goes: `child',
`point' or `chat'; with a prefix argument you choose.  In the buffer
the answer streams in as one undo step; \\[org-agent-here-stop] stops it."
  (interactive
   (let ((place (and current-prefix-arg (org-agent-here--read-place))))
     (list (read-string (if (use-region-p) "Ask org-agent about the region: "
                          "Ask org-agent here: "))
           place)))
  (when (string-empty-p (string-trim question))
    (user-error "Nothing to ask"))
  (org-agent--require-started)
  (let* ((wanted (or place org-agent-here-answer-place))
         (place (org-agent-here--place place))
         (region (and (use-region-p) (cons (region-beginning) (region-end))))
         (selection (and region (org-agent-here--redact
                                 (buffer-substring-no-properties (car region) (cdr region))))))
    (when (and (eq place 'chat) (not (eq wanted 'chat)))
      (message "org-agent: %s is read-only; the answer comes in the chat" (buffer-name)))
    (if (eq place 'chat)
        (org-agent-ask (org-agent-here--prompt question selection nil))
      (when region (deactivate-mark))
      (org-agent-here--start-answer
       question (org-agent-here--prompt question selection place) place
       (if (and region (eq place 'point)) (cdr region) (point))))))

(defun org-agent-here--start-answer (question prompt place pos)
  "Open the answer's region for QUESTION in PLACE at POS and send PROMPT."
  (let* ((focus (org-agent-here--focus))
         (backends (org-agent-here--backends))
         (label (org-agent-backends-label (car backends)))
         (group (progn (undo-boundary) (prepare-change-group)))
         (job (org-agent-here--job-create :kind 'answer :buffer (current-buffer)
                                          :group group :label label))
         (ok nil))
    (activate-change-group group)
    (unwind-protect
        (progn
          (save-excursion
            (goto-char pos)
            (if (eq place 'child)
                (org-agent-here--open-child job question label)
              (let ((level (and (derived-mode-p 'org-mode)
                                (not (org-before-first-heading-p))
                                (org-current-level))))
                (setf (org-agent-here--job-start job) (copy-marker (point))
                      (org-agent-here--job-end job) (copy-marker (point) t)
                      (org-agent-here--job-at-bol job) (bolp)
                      (org-agent-here--job-prefix job) (make-string (or level 0) ?*)))))
          (setf (org-agent-here--job-step job) (copy-marker (org-agent-here--job-end job)))
          (org-agent-here--send job prompt
                                (append (and focus (list :focus focus))
                                        ;; Markdown becomes Org only where Org is
                                        ;; written, its headings at the top: the
                                        ;; answer's stars go below the place's own.
                                        (if (derived-mode-p 'org-mode)
                                            (list :answer-level 0)
                                          (list :answer-format 'raw))))
          (add-hook 'kill-buffer-hook #'org-agent-here--buffer-killed nil t)
          (setq ok t)
          (message "org-agent: answering here; %s stops it"
                   (substitute-command-keys "\\[org-agent-here-stop]")))
      (unless ok
        (cancel-change-group group)
        (org-agent-here--release job)))
    job))

(defun org-agent-here--open-child (job question label)
  "Insert JOB's child heading for QUESTION under the heading at point.
LABEL names the backend; the answer will grow under the heading."
  (org-back-to-heading t)
  (let ((level (org-get-valid-level (org-current-level) 1)))
    (org-end-of-subtree t t)
    (unless (bolp) (insert "\n"))
    (let ((start (point)))
      (insert (make-string level ?*) " " (org-agent-here--title question) "\n"
              ":PROPERTIES:\n:ORG_AGENT_MODEL: " label "\n:END:\n"
              ;; The answer goes before this newline, which keeps the next heading at the
              ;; start of its line however the answer's text ends.
              "\n")
      (setf (org-agent-here--job-start job) (copy-marker start t)
            (org-agent-here--job-heading job) (copy-marker start)
            (org-agent-here--job-end job) (copy-marker (1- (point)) t)
            (org-agent-here--job-tail job) t
            (org-agent-here--job-at-bol job) t
            (org-agent-here--job-prefix job) (make-string level ?*)))))

;;;; Streaming into the buffer

(defun org-agent-here--shape (job text final)
  "Return TEXT, the next piece of JOB's answer, ready for the buffer.
Leading white space of the answer is dropped.  A line that would be
a headline gets JOB's prefix of stars, so it stays inside the region's
heading; a line of only stars may still become one, so it is held
back until its line goes on or FINAL says the answer is complete."
  (let ((s (let ((pending (org-agent-here--job-pending job)))
             ;; TEXT itself when nothing was held back: no copy per streamed piece.
             (if (string-empty-p pending) text (concat pending text))))
        (prefix (org-agent-here--job-prefix job)))
    (setf (org-agent-here--job-pending job) "")
    (unless (org-agent-here--job-started job)
      (setq s (string-trim-left s))
      (unless (string-empty-p s) (setf (org-agent-here--job-started job) t)))
    (if (or (string-empty-p prefix) (string-empty-p s)
            ;; No line of S starts with a star: nothing to prefix or hold back, and no
            ;; line-by-line copies of a piece that needs none.
            (not (or (string-search "\n*" s)
                     (and (org-agent-here--job-at-bol job) (string-prefix-p "*" s)))))
        (progn
          (unless (string-empty-p s)
            (setf (org-agent-here--job-at-bol job) (string-suffix-p "\n" s)))
          s)
      (let ((pos 0) (out nil) (bol (org-agent-here--job-at-bol job)))
        (while (< pos (length s))
          (let* ((nl (string-search "\n" s pos))
                 (line (substring s pos (or nl (length s)))))
            (cond
             ((not bol) (push line out))
             ((and (not nl) (not final) (string-match-p "\\`\\*+\\'" line))
              (setf (org-agent-here--job-pending job) line))
             ((string-match-p "\\`\\*+\\(?: \\|\\'\\)" line) (push (concat prefix line) out))
             (t (push line out)))
            (if nl
                (progn (push "\n" out) (setq bol t pos (1+ nl)))
              (setq bol nil pos (length s)))))
        (let ((result (apply #'concat (nreverse out))))
          (unless (string-empty-p result)
            (setf (org-agent-here--job-at-bol job) (string-suffix-p "\n" result)))
          result)))))

(defun org-agent-here--write (job text)
  "Insert TEXT at the end of JOB's region; return nil when it cannot be written."
  (let ((buffer (org-agent-here--job-buffer job)))
    (cond
     ((string-empty-p text) t)
     ((not (buffer-live-p buffer)) nil)
     (t
      (with-current-buffer buffer
        (let ((pt (point)))
          (condition-case err
              (progn
                ;; Point moved back by hand rather than by `save-excursion', whose
                ;; marker would be garbage made at every streamed piece.  Inserting at
                ;; the end moves a point after it by the text's length, and leaves one
                ;; at it before the text, as `save-excursion' would.
                (save-restriction
                  (widen)
                  (let ((at (marker-position (org-agent-here--job-end job))))
                    (goto-char at)
                    (insert text)
                    (goto-char (if (> pt at) (+ pt (- (point) at)) pt))))
                ;; From now on, text typed at the region's start stays before it.
                (set-marker-insertion-type (org-agent-here--job-start job) t)
                t)
            ((buffer-read-only text-read-only)
             (goto-char pt)
             (message "org-agent: %s became read-only (%s); the answer stops there"
                      (buffer-name) (error-message-string err))
             nil))))))))

(defun org-agent-here--note (job what)
  "End JOB's answer in the buffer with a line saying WHAT happened."
  (org-agent-here--write
   job (concat (if (org-agent-here--job-at-bol job) "" "\n") (format "[org-agent: %s]\n" what)))
  (setf (org-agent-here--job-at-bol job) t))

(defun org-agent-here--finish-answer (job state &optional note)
  "End JOB in STATE; NOTE, if given, is written at the end of its answer."
  (setf (org-agent-here--job-state job) state)
  (org-agent-here--forget job)
  (let ((buffer (org-agent-here--job-buffer job)))
    (when (buffer-live-p buffer)
      (org-agent-here--write job (org-agent-here--shape job "" t))
      (when note (org-agent-here--note job note))
      (with-current-buffer buffer
        (ignore-errors
          (save-excursion
            (save-restriction
              (widen)
              (let ((end (org-agent-here--job-end job)))
                ;; The answer ends its line already: the kept newline would be a blank one.
                (when (and (org-agent-here--job-tail job) (not buffer-read-only)
                           (> end (point-min)) (eq (char-before end) ?\n)
                           (eq (char-after end) ?\n))
                  (delete-region end (1+ end)))))))
        (let ((group (org-agent-here--job-group job)))
          (undo-amalgamate-change-group group)
          (accept-change-group group))
        (undo-boundary)
        (unless (seq-some (lambda (j) (eq (org-agent-here--job-buffer j) buffer))
                          (hash-table-values org-agent-here--jobs))
          (remove-hook 'kill-buffer-hook #'org-agent-here--buffer-killed t))))
    (org-agent-here--release job)))

(defun org-agent-here--release (job)
  "Let go of JOB's markers in its buffer."
  (dolist (m (list (org-agent-here--job-start job) (org-agent-here--job-end job)
                   (org-agent-here--job-heading job) (org-agent-here--job-step job)))
    (when (markerp m) (set-marker m nil))))

(defun org-agent-here--failover (job event)
  "A backend failed (EVENT): drop what it streamed for JOB if asked; name the next."
  (let ((next (plist-get event :next))
        (step (org-agent-here--job-step job)))
    (when (and (plist-get event :discard) step (marker-buffer step))
      (with-current-buffer (marker-buffer step)
        (unless buffer-read-only
          (save-restriction
            (widen)
            (delete-region step (org-agent-here--job-end job))
            (setf (org-agent-here--job-pending job) ""
                  (org-agent-here--job-started job) nil
                  (org-agent-here--job-at-bol job) (save-excursion (goto-char step) (bolp)))))))
    (when next
      (setf (org-agent-here--job-label job)
            (org-agent-backends-label (or (org-agent-backends-named next) (list :name next))))
      (let ((heading (org-agent-here--job-heading job))
            (buffer (org-agent-here--job-buffer job)))
        (when (and heading (buffer-live-p buffer))
          (with-current-buffer buffer
            (ignore-errors
              (org-entry-put heading "ORG_AGENT_MODEL" (org-agent-here--job-label job)))))))
    (message "org-agent: %s failed: %s%s" (plist-get event :backend) (plist-get event :message)
             (if next (format "; asking %s" next) ""))))

(defun org-agent-here--answer-event (job event)
  "Show EVENT, of JOB's request, in JOB's buffer."
  (let ((buffer (org-agent-here--job-buffer job)))
    (if (not (buffer-live-p buffer))
        (progn (org-agent--cancel (org-agent-here--job-request job))
               (setf (org-agent-here--job-state job) 'stopped)
               (org-agent-here--forget job)
               (org-agent-here--release job))
      (pcase (plist-get event :kind)
        ('text
         (unless (org-agent-here--write job (org-agent-here--shape
                                             job (plist-get event :text) nil))
           (org-agent--cancel (org-agent-here--job-request job))
           (org-agent-here--finish-answer job 'stopped)))
        ('failover (org-agent-here--failover job event))
        ('done (org-agent-here--finish-answer job 'done))
        ('error (org-agent-here--finish-answer
                 job 'error (format "error: %s" (plist-get event :message)))
                (message "org-agent: %s" (plist-get event :message)))
        ('interrupted (org-agent-here--finish-answer job 'interrupted "interrupted"))))))

;;;; Events

(defun org-agent-here--deny (event)
  "Deny the edit EVENT asks about: an answer in place edits nothing else."
  (message "org-agent: an answer in place makes no edits; denied %s (use the chat for edits)"
           (plist-get event :name))
  (org-agent--answer (plist-get event :reply) 'deny))

(defun org-agent-here--handle (event)
  "Act on the chat EVENT if it belongs to a request of this file."
  (when-let ((job (gethash (plist-get event :request) org-agent-here--jobs)))
    (pcase (plist-get event :kind)
      ('ask (org-agent-here--deny event))
      ((or 'retrying 'notice)
       (message "org-agent: %s" (plist-get event :message)))
      ('tool (message "org-agent: tool %s (%s)" (plist-get event :name)
                      (plist-get event :decision)))
      (_ (if (eq (org-agent-here--job-kind job) 'rewrite)
             (org-agent-here--rewrite-event job event)
           (org-agent-here--answer-event job event))))))

(add-hook 'org-agent-chat-functions #'org-agent-here--handle)

(defun org-agent-here--buffer-killed ()
  "Stop the answers streaming into the buffer being killed."
  (let ((buffer (current-buffer)))
    (dolist (job (hash-table-values org-agent-here--jobs))
      (when (and (eq (org-agent-here--job-kind job) 'answer)
                 (eq (org-agent-here--job-buffer job) buffer))
        (org-agent--cancel (org-agent-here--job-request job))
        (setf (org-agent-here--job-state job) 'stopped)
        (org-agent-here--forget job)
        (org-agent-here--release job)))))

;;;###autoload
(defun org-agent-here-stop ()
  "Stop the answers and rewrites in flight.
Those of `org-agent-here-ask' and `org-agent-here-rewrite':
those of the current buffer (or of the rewrite it shows), or if it
has none, all of them.  An answer keeps what came, with a note that
it was interrupted; `org-agent-interrupt' stops them too."
  (interactive)
  (let* ((all (seq-filter (lambda (j) (eq (org-agent-here--job-state j) 'running))
                          (hash-table-values org-agent-here--jobs)))
         (here (seq-filter (lambda (j) (or (eq (org-agent-here--job-buffer j) (current-buffer))
                                           (eq j org-agent-here--rewrite)))
                           all)))
    (dolist (job (or here all))
      (org-agent--cancel (org-agent-here--job-request job)))
    (message "org-agent: %s" (if (or here all) "stopping" "nothing to stop"))))

;;;; Rewriting

(defvar org-agent-here-rewrite-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'org-agent-here-rewrite-accept)
    (define-key map (kbd "C-c C-k") #'org-agent-here-rewrite-reject)
    (define-key map (kbd "C-c C-r") #'org-agent-here-rewrite-again)
    (define-key map (kbd "C-c C-e") #'org-agent-here-rewrite-ediff)
    (define-key map (kbd "C-c C-s") #'org-agent-here-stop)
    map)
  "Keys of a rewrite's proposal and diff buffers.")

(define-minor-mode org-agent-here-rewrite-mode
  "The keys of a proposed rewrite.
\\{org-agent-here-rewrite-mode-map}"
  :lighter " Rewrite"
  :keymap org-agent-here-rewrite-mode-map
  :group 'org-agent-chat
  :interactive nil)
;; A local minor mode's hook is an option of no group: give it the mode's.
(custom-add-to-group 'org-agent-chat 'org-agent-here-rewrite-mode-hook 'custom-variable)

(defun org-agent-here--rewrite-prompt (job previous)
  "The message asking for JOB's rewrite; PREVIOUS is the last proposal, or nil."
  (let ((org (with-current-buffer (org-agent-here--job-buffer job)
               (derived-mode-p 'org-mode)))
        (mode (with-current-buffer (org-agent-here--job-buffer job)
                (format-mode-line mode-name))))
    (concat
     "Rewrite the text below as the instruction says. Reply with the replacement \
text only: no introduction, no explanation, no code fence around it. Keep what the \
instruction does not ask to change as it is"
     (if org ", and keep the Org structure: every headline with its level, \
drawers, property drawers and blocks." ".")
     (format "\n\nInstruction: %s\n\nThe text (%s, from %s):\n-----BEGIN TEXT-----\n%s%s-----END TEXT-----"
             (org-agent-here--job-instruction job) mode (buffer-name (org-agent-here--job-buffer job))
             (org-agent-here--job-original job)
             (if (string-suffix-p "\n" (org-agent-here--job-original job)) "" "\n"))
     (and previous
          (format "\n\nYour previous proposal, which the instruction revises:\n\
-----BEGIN PROPOSAL-----\n%s%s-----END PROPOSAL-----"
                  previous (if (string-suffix-p "\n" previous) "" "\n"))))))

;;;###autoload
(defun org-agent-here-rewrite (beg end instruction)
  "Ask the agent to rewrite the region from BEG to END following INSTRUCTION.
The proposal streams into a proposal buffer, then shows as a diff:
\\<org-agent-here-rewrite-mode-map>\\[org-agent-here-rewrite-accept] \
replaces the region with it (one undo step, only if the region still
holds the text sent), \\[org-agent-here-rewrite-reject] drops it, \
\\[org-agent-here-rewrite-again] asks again with a follow-up
instruction, \\[org-agent-here-rewrite-ediff] opens ediff on the
original and the proposal.  The model gets no tools: only the text."
  (interactive
   (if (use-region-p)
       (list (region-beginning) (region-end) (read-string "Rewrite the region how? "))
     (user-error "Select the text to rewrite first")))
  (when (string-empty-p (string-trim instruction))
    (user-error "No instruction"))
  (when (= beg end)
    (user-error "The region is empty"))
  (org-agent--require-started)
  (let* ((text (buffer-substring-no-properties beg end))
         (job (org-agent-here--job-create
               :kind 'rewrite :buffer (current-buffer)
               ;; Text typed at either end stays outside the region.
               :start (copy-marker beg t) :end (copy-marker end)
               :original text :instruction instruction)))
    (unless (equal (org-agent-here--redact text) text)
      (org-agent-here--release job)
      (user-error "The region holds private notes (`org-agent-private-tags'): it is not sent"))
    (deactivate-mark)
    (org-agent-here--request-rewrite job nil)
    job))

(defun org-agent-here--rewrite-buffers (job)
  "Make (or empty) JOB's proposal and original buffers."
  (let ((name (buffer-name (org-agent-here--job-buffer job))))
    (unless (buffer-live-p (org-agent-here--job-proposal job))
      (setf (org-agent-here--job-proposal job)
            (generate-new-buffer (format "*org-agent rewrite: %s*" name))))
    (unless (buffer-live-p (org-agent-here--job-original-buffer job))
      (setf (org-agent-here--job-original-buffer job)
            (generate-new-buffer (format " *org-agent original: %s*" name)))
      (with-current-buffer (org-agent-here--job-original-buffer job)
        (insert (org-agent-here--job-original job))))
    (with-current-buffer (org-agent-here--job-proposal job)
      (let ((inhibit-read-only t)) (erase-buffer))
      (setq buffer-read-only t)
      (org-agent-here-rewrite-mode 1)
      (setq org-agent-here--rewrite job)
      (add-hook 'kill-buffer-hook #'org-agent-here--proposal-killed nil t)
      (setq header-line-format
            (format "Rewriting %s: %s  (%s stops)" name (org-agent-here--job-instruction job)
                    ;; Keys looked up in the mode's map alone: searching every active
                    ;; map with Org loaded conses some 80 KB.
                    (substitute-command-keys
                     "\\<org-agent-here-rewrite-mode-map>\\[org-agent-here-stop]"))))))

(defun org-agent-here--request-rewrite (job previous)
  "Send JOB's rewrite request; PREVIOUS is the proposal being revised, or nil."
  (org-agent-here--rewrite-buffers job)
  (setf (org-agent-here--job-warnings job) nil)
  (condition-case err
      (org-agent-here--send job (org-agent-here--rewrite-prompt job previous)
                            ;; The text as the model wrote it: the region may be code.
                            (list :tool-rounds 0 :answer-format 'raw))
    (error
     (org-agent-here--rewrite-cleanup job)
     (signal (car err) (cdr err))))
  (display-buffer (org-agent-here--job-proposal job))
  (message "org-agent: rewriting; the proposal comes in %s"
           (buffer-name (org-agent-here--job-proposal job))))

(defun org-agent-here--rewrite-event (job event)
  "Show EVENT of JOB's rewrite request."
  (let ((proposal (org-agent-here--job-proposal job)))
    (if (not (buffer-live-p proposal))
        (progn (org-agent--cancel (org-agent-here--job-request job))
               (org-agent-here--forget job))
      (with-current-buffer proposal
        (let ((inhibit-read-only t))
          (pcase (plist-get event :kind)
            ('text
             ;; Not `save-excursion' (a marker per piece): inserting at the end moves
             ;; no point but one at the end, which stays before the text as it would.
             (let ((pt (point)))
               (goto-char (point-max))
               (insert (plist-get event :text))
               (goto-char pt)))
            ('failover
             (when (plist-get event :discard) (erase-buffer))
             (org-agent-here--failover job event))
            ('done
             (setf (org-agent-here--job-state job) 'done)
             (org-agent-here--forget job)
             (org-agent-here--show-proposal job))
            ((or 'error 'interrupted)
             (setf (org-agent-here--job-state job) (plist-get event :kind))
             (org-agent-here--forget job)
             (setq buffer-read-only nil)
             (setq header-line-format
                   (substitute-command-keys
                    (format "\\<org-agent-here-rewrite-mode-map>Rewrite %s%s: \\[org-agent-here-rewrite-again] asks again, \\[org-agent-here-rewrite-reject] drops it"
                            (if (eq (plist-get event :kind) 'error) "failed: " "interrupted")
                            (or (plist-get event :message) ""))))
             (message "org-agent: the rewrite %s" (if (eq (plist-get event :kind) 'error)
                                                      (format "failed: %s" (plist-get event :message))
                                                    "was interrupted")))))))))

(defun org-agent-here--unfence (text original)
  "TEXT without one code fence around it, ending in a newline as ORIGINAL does.
Only a fence around the whole text goes, and only when no other fence
line is inside it."
  (let* ((trimmed (string-trim text))
         (text (if (and (string-match "\\````[^`\n]*\n" trimmed)
                        (string-suffix-p "\n```" trimmed)
                        (let ((inner (substring trimmed (match-end 0) (- (length trimmed) 3))))
                          (and (not (string-match-p "^```" inner)) (setq trimmed inner))))
                   trimmed
                 text)))
    (cond
     ((and (string-suffix-p "\n" original) (not (string-suffix-p "\n" text)))
      (concat text "\n"))
     ((and (not (string-suffix-p "\n" original)) (string-suffix-p "\n" text))
      (string-trim-right text "\n+"))
     (t text))))

(defun org-agent-here--structure (text)
  "The Org structure of TEXT: (HEADLINE-LEVELS DRAWERS BLOCKS)."
  (with-temp-buffer
    (insert text)
    (let ((case-fold-search t) levels (drawers 0) (blocks 0))
      (goto-char (point-min))
      (while (re-search-forward "^\\(\\*+\\) " nil t)
        (push (length (match-string 1)) levels))
      (goto-char (point-min))
      (while (re-search-forward "^[ \t]*:END:[ \t]*$" nil t) (cl-incf drawers))
      (goto-char (point-min))
      (while (re-search-forward "^[ \t]*#\\+begin_" nil t) (cl-incf blocks))
      (list (nreverse levels) drawers blocks))))

(defun org-agent-here--structure-changes (original proposal)
  "Return the differences of Org structure between ORIGINAL and PROPOSAL."
  (pcase-let ((`(,l1 ,d1 ,b1) (org-agent-here--structure original))
              (`(,l2 ,d2 ,b2) (org-agent-here--structure proposal)))
    (delq nil
          (list (unless (equal l1 l2)
                  (format "headlines: %d (levels %s) become %d (levels %s)"
                          (length l1) (mapconcat #'number-to-string l1 " ")
                          (length l2) (mapconcat #'number-to-string l2 " ")))
                (unless (= d1 d2) (format "drawers: %d become %d" d1 d2))
                (unless (= b1 b2) (format "blocks: %d become %d" b1 b2))))))

(defun org-agent-here-rewrite-warnings (&optional buffer)
  "Return the Org structure lost or added by the proposal in BUFFER.
BUFFER is a proposal or diff buffer, by default the current one.  The
value is a list of strings, nil when the proposal keeps the headlines,
drawers and blocks of the text it replaces (or the text is not Org)."
  (let ((job (buffer-local-value 'org-agent-here--rewrite (or buffer (current-buffer)))))
    (and job (org-agent-here--job-warnings job))))

(defun org-agent-here--show-proposal (job)
  "JOB's proposal is complete: clean it up and show it as a diff."
  (let* ((proposal (org-agent-here--job-proposal job))
         (text (org-agent-here--unfence (with-current-buffer proposal (buffer-string))
                                        (org-agent-here--job-original job)))
         (org (and (buffer-live-p (org-agent-here--job-buffer job))
                   (with-current-buffer (org-agent-here--job-buffer job)
                     (derived-mode-p 'org-mode)))))
    (with-current-buffer proposal
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert text))
      (setq buffer-read-only nil)
      (set-buffer-modified-p nil)
      (setq header-line-format
            (substitute-command-keys
             "\\<org-agent-here-rewrite-mode-map>Proposal (editable): \\[org-agent-here-rewrite-accept] accept, \\[org-agent-here-rewrite-reject] reject, \\[org-agent-here-rewrite-again] again, \\[org-agent-here-rewrite-ediff] ediff")))
    (setf (org-agent-here--job-warnings job)
          (and org (org-agent-here--structure-changes (org-agent-here--job-original job) text)))
    (org-agent-here--show-diff job)))

(defun org-agent-here--show-diff (job)
  "Show the diff of JOB's original and proposal, with the rewrite's keys."
  (let ((diff (or (and (buffer-live-p (org-agent-here--job-diff job)) (org-agent-here--job-diff job))
                  (generate-new-buffer
                   (format "*org-agent rewrite diff: %s*"
                           (buffer-name (org-agent-here--job-buffer job))))))
        (warnings (org-agent-here--job-warnings job)))
    (setf (org-agent-here--job-diff job) diff)
    (if (executable-find diff-command)
        ;; Synchronous: an asynchronous diff's output could arrive after its buffer is
        ;; gone (a rejected or accepted proposal).  Once per proposal, after its stream.
        (diff-no-select (org-agent-here--job-original-buffer job) (org-agent-here--job-proposal job)
                        "-u" t diff)
      (with-current-buffer diff
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (format "(No `%s' program: C-c C-e compares with ediff.)\n" diff-command)))))
    (with-current-buffer diff
      (org-agent-here-rewrite-mode 1)
      (setq org-agent-here--rewrite job)
      (add-hook 'kill-buffer-hook #'org-agent-here--proposal-killed nil t)
      (when warnings
        (let ((inhibit-read-only t))
          (save-excursion
            (goto-char (point-min))
            (insert (mapconcat (lambda (w) (format "# Warning: the Org structure changes: %s\n" w))
                               warnings "")))))
      (setq header-line-format
            (substitute-command-keys
             (concat "\\<org-agent-here-rewrite-mode-map>"
                     (if warnings "STRUCTURE CHANGES: " "")
                     "\\[org-agent-here-rewrite-accept] accept, \\[org-agent-here-rewrite-reject] reject, \\[org-agent-here-rewrite-again] again, \\[org-agent-here-rewrite-ediff] ediff"))))
    (display-buffer diff)
    (when warnings
      (message "org-agent: the proposal changes the Org structure: %s"
               (string-join warnings "; ")))))

(defun org-agent-here--current-rewrite ()
  "Return the rewrite of the current buffer, or the only one pending."
  (or org-agent-here--rewrite
      (let ((jobs (seq-uniq
                   (delq nil (mapcar (lambda (b) (buffer-local-value 'org-agent-here--rewrite b))
                                     (buffer-list))))))
        (if (= (length jobs) 1) (car jobs)
          (user-error (if jobs "Several rewrites are pending: go to the one you mean"
                        "No rewrite is pending"))))))

(defun org-agent-here-rewrite-accept ()
  "Replace the rewritten region with the proposal, as one undo step.
Refused when the region no longer holds the text that was sent."
  (interactive nil org-agent-here-rewrite-mode)
  (let* ((job (org-agent-here--current-rewrite))
         (buffer (org-agent-here--job-buffer job))
         (start (org-agent-here--job-start job))
         (end (org-agent-here--job-end job)))
    (unless (eq (org-agent-here--job-state job) 'done)
      (user-error "The proposal is not complete: wait, or %s asks again"
                  (substitute-command-keys "\\[org-agent-here-rewrite-again]")))
    (unless (and (buffer-live-p buffer) (marker-buffer start))
      (user-error "The buffer of the rewritten text is gone"))
    (with-current-buffer buffer
      (unless (equal (save-restriction (widen) (buffer-substring-no-properties start end))
                     (org-agent-here--job-original job))
        (user-error "The region changed since it was sent: not replaced (%s rejects, or rewrite it again)"
                    (substitute-command-keys "\\[org-agent-here-rewrite-reject]")))
      (when buffer-read-only
        (user-error "%s is read-only" (buffer-name))))
    (let ((warnings (org-agent-here--job-warnings job))
          (text (with-current-buffer (org-agent-here--job-proposal job)
                  (buffer-substring-no-properties (point-min) (point-max)))))
      (when (and warnings
                 (not (y-or-n-p (format "The proposal changes the Org structure (%s); accept it? "
                                        (string-join warnings "; ")))))
        (user-error "Not accepted"))
      (with-current-buffer buffer
        ;; The user's last edits stay a step of their own.
        (undo-boundary)
        (let ((group (prepare-change-group)))
          (activate-change-group group)
          (unwind-protect
              (save-excursion
                (save-restriction
                  (widen)
                  (goto-char start)
                  (insert text)
                  (delete-region (point) end)))
            (undo-amalgamate-change-group group)
            (accept-change-group group))
          (undo-boundary)))
      (org-agent-here--rewrite-cleanup job)
      (pop-to-buffer buffer)
      (message "org-agent: rewritten (%s undoes it)" (substitute-command-keys "\\[undo]")))))

(defun org-agent-here-rewrite-reject ()
  "Drop the proposed rewrite; the region stays as it is."
  (interactive nil org-agent-here-rewrite-mode)
  (let ((job (org-agent-here--current-rewrite)))
    (when (eq (org-agent-here--job-state job) 'running)
      (org-agent--cancel (org-agent-here--job-request job)))
    (org-agent-here--rewrite-cleanup job)
    (message "org-agent: rewrite rejected")))

(defun org-agent-here-rewrite-again (instruction)
  "Ask for another proposal: INSTRUCTION revises the last one.
The model gets the original text, the previous proposal and INSTRUCTION."
  (interactive (list (read-string "Follow-up instruction: ")) org-agent-here-rewrite-mode)
  (let* ((job (org-agent-here--current-rewrite))
         (previous (and (buffer-live-p (org-agent-here--job-proposal job))
                        (with-current-buffer (org-agent-here--job-proposal job)
                          (buffer-substring-no-properties (point-min) (point-max))))))
    (when (eq (org-agent-here--job-state job) 'running)
      (user-error "The agent is still writing the proposal; %s stops it"
                  (substitute-command-keys "\\[org-agent-here-stop]")))
    (when (string-empty-p (string-trim instruction))
      (user-error "No instruction"))
    (setf (org-agent-here--job-instruction job) instruction)
    (org-agent-here--request-rewrite job (and previous (not (string-empty-p previous)) previous))))

(defun org-agent-here-rewrite-ediff ()
  "Compare the original text and the proposal with ediff."
  (interactive nil org-agent-here-rewrite-mode)
  (let ((job (org-agent-here--current-rewrite)))
    (ediff-buffers (org-agent-here--job-original-buffer job) (org-agent-here--job-proposal job))))

(defun org-agent-here--rewrite-cleanup (job &optional dying)
  "Kill JOB's buffers but DYING, being killed already, and let go of its markers."
  (setf (org-agent-here--job-state job) 'stopped)
  (org-agent-here--forget job)
  (dolist (b (list (org-agent-here--job-proposal job) (org-agent-here--job-diff job)
                   (org-agent-here--job-original-buffer job)))
    (when (buffer-live-p b)
      (with-current-buffer b
        (remove-hook 'kill-buffer-hook #'org-agent-here--proposal-killed t)
        (setq org-agent-here--rewrite nil))
      (unless (eq b dying) (kill-buffer b))))
  (org-agent-here--release job))

(defun org-agent-here--proposal-killed ()
  "A rewrite's proposal or diff buffer is killed: the rewrite is dropped."
  (let ((job org-agent-here--rewrite))
    (when job
      (setq org-agent-here--rewrite nil)
      (when (eq (org-agent-here--job-state job) 'running)
        (org-agent--cancel (org-agent-here--job-request job)))
      (org-agent-here--rewrite-cleanup job (current-buffer)))))

(provide 'org-agent-here)
;;; org-agent-here.el ends here
