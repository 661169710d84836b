;;; org-agent-approvals.el --- What background skills proposed, for the user to decide -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;;; Commentary:

;; A skill running with no user waiting cannot ask: each action the
;; gates would ask about goes to the approvals queue, an Org file in
;; the state directory the module keeps (approvals.org).  When one is
;; queued, Emacs previews it on a scratch copy of its buffer and the
;; diff is kept with it.  `M-x org-agent-approvals' lists what is
;; pending; approving one runs it through the actuator, as in the chat
;; (one undo step), denying it only records the answer.  Both are
;; written to the audit log.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org-agent-actuator)
(require 'org-agent-chat)
(require 'org-agent-runs)
(require 'diff-mode)
(org-agent--declare-module-functions)

(defvar org-agent-approvals-buffer-name "*org-agent-approvals*"
  "Name of the buffer `org-agent-approvals' shows.")

;;;###autoload
(defun org-agent-approvals-list (&optional all)
  "Return the pending proposals of the approvals queue, oldest first.
With ALL, settled ones too.  Each is a plist (:id :state :skill :tool
:action :reasons :provenance :created :diff :outcome); :state is
`pending', `approved' or `denied'."
  (org-agent--require-started)
  (org-agent--approvals all))

(defun org-agent-approvals--get (id)
  "The pending proposal ID, or signal a user error."
  (or (seq-find (lambda (p) (eql (plist-get p :id) id)) (org-agent-approvals-list))
      (user-error "No pending proposal #%s" id)))

(defun org-agent-approvals--audit-file ()
  "The audit log the answers are written to."
  (expand-file-name (or org-agent-audit-file
                        (expand-file-name "audit.org" org-agent-state-directory))))

(defun org-agent-approvals--preview (id action)
  "Preview ACTION of proposal ID and keep its diff in the queue."
  (let ((preview (condition-case err
                     (org-agent-actuator-preview action)
                   (error (list :error (error-message-string err))))))
    (when-let ((diff (or (plist-get preview :diff)
                         (and (plist-get preview :error)
                              (format "(no preview: %s)" (plist-get preview :error))))))
      (org-agent--approval-diff id diff))))

(defun org-agent-approvals--queued (event)
  "Preview the action of a queued EVENT and refresh the list if shown."
  (org-agent-approvals--preview (plist-get event :proposal) (plist-get event :action))
  (org-agent-approvals--refresh-if-shown))

(add-hook 'org-agent-approvals-queued-functions #'org-agent-approvals--queued)

(defun org-agent-approvals-approve (id)
  "Run pending proposal ID through the actuator, as one undo step.
Its edit counts as the proposing skill's own: its save does not
fire that skill's save trigger again.  When it runs, it is settled
as approved (and audited); when the actuator refuses it, or its
note's file now leads somewhere the agent may not edit, it stays
pending and the error is signalled.  Return the actuator's result
plist."
  (let* ((proposal (org-agent-approvals--get id))
         (refusal (progn
                    ;; Judged again as things are now: a link may have changed since.
                    (org-agent--send-privacy)
                    (org-agent--edit-refusal (plist-get proposal :action))))
         (result (if refusal
                     (list :status :error :message refusal)
                   ;; Before it runs: the save it makes is ingested on a worker, which
                   ;; must know the edit is the proposing skill's own, so that it does
                   ;; not fire that skill's save trigger again.
                   (org-agent--approval-settle id 'applying "" nil)
                   (org-agent-actuator-run (plist-get proposal :action)))))
    (if (eq (plist-get result :status) :ok)
        (progn
          (org-agent--approval-settle id 'approved
                                      (or (plist-get result :message) "done")
                                      (org-agent-approvals--audit-file))
          (org-agent-approvals--refresh-if-shown)
          result)
      (user-error "Proposal #%s did not run: %s" id (plist-get result :message)))))

(defun org-agent-approvals-deny (id)
  "Deny pending proposal ID: settle it as denied (and audited), run nothing."
  (org-agent-approvals--get id)
  (org-agent--approval-settle id 'denied "denied by the user"
                              (org-agent-approvals--audit-file))
  (org-agent-approvals--refresh-if-shown))

;;;; The buffer

(defvar org-agent-approvals-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (define-key map "a" #'org-agent-approvals-approve-at-point)
    (define-key map "d" #'org-agent-approvals-deny-at-point)
    (define-key map "n" #'org-agent-approvals-next)
    (define-key map "p" #'org-agent-approvals-previous)
    (define-key map "g" #'org-agent-approvals-refresh)
    (define-key map "o" #'org-agent-approvals-open-queue)
    map)
  "Keys of the approvals buffer.")

(define-derived-mode org-agent-approvals-mode special-mode "org-agent approvals"
  "What background skills proposed, waiting for the user's answer.
\\<org-agent-approvals-mode-map>\\[org-agent-approvals-approve-at-point] approves (runs) the \
proposal at point, \\[org-agent-approvals-deny-at-point] denies it,
\\[org-agent-approvals-next] and \\[org-agent-approvals-previous] move between proposals, \
\\[org-agent-approvals-refresh] refreshes,
\\[org-agent-approvals-open-queue] opens the queue's Org file."
  :interactive nil
  (setq truncate-lines nil))

(defvar org-agent-approvals--fontified-diffs (make-hash-table)
  "Proposal id → (DIFF . DIFF with diff-mode's faces).
Fontifying a diff takes milliseconds; the buffer is filled again
after every answer, so without this, clearing a batch of N would
fontify N²/2 diffs.")

(defun org-agent-approvals--fontified (id diff)
  "DIFF of proposal ID with the faces `diff-mode' gives it, made once."
  (let ((cached (gethash id org-agent-approvals--fontified-diffs)))
    (if (equal (car cached) diff)
        (cdr cached)
      (let ((fontified (with-temp-buffer
                         (insert diff)
                         (delay-mode-hooks (diff-mode))
                         (font-lock-ensure)
                         (buffer-string))))
        (puthash id (cons diff fontified) org-agent-approvals--fontified-diffs)
        fontified))))

(defun org-agent-approvals--insert (proposal)
  "Insert PROPOSAL, with its id as a text property."
  (let ((start (point))
        (diff (plist-get proposal :diff)))
    (insert (propertize (format "#%d  %s  (skill %s)\n"
                                (plist-get proposal :id) (plist-get proposal :tool)
                                (plist-get proposal :skill))
                        'face 'org-level-1))
    (insert (format "    proposed %s after %s\n"
                    (format-time-string "%F %R" (plist-get proposal :created))
                    (plist-get proposal :provenance)))
    (dolist (reason (plist-get proposal :reasons))
      (insert (format "    asked because: %s\n" reason)))
    (insert (format "    %s\n" (org-agent--print-sexp (plist-get proposal :action))))
    (when (and diff (not (string-empty-p diff)))
      (let ((diff-start (point)))
        (insert diff)
        (unless (bolp) (insert "\n"))
        ;; The diff's own faces, without turning the buffer into a diff buffer.
        (let ((text (buffer-substring diff-start (point))))
          (delete-region diff-start (point))
          (insert (org-agent-approvals--fontified (plist-get proposal :id) text)))))
    (insert "\n")
    (put-text-property start (point) 'org-agent-approval (plist-get proposal :id))))

(defun org-agent-approvals--fill ()
  "Fill the current buffer with the pending proposals."
  (let ((inhibit-read-only t)
        (line (line-number-at-pos))
        (proposals (org-agent-approvals-list)))
    ;; Only the pending proposals' diffs are worth keeping.
    (let ((pending (mapcar (lambda (p) (plist-get p :id)) proposals)))
      (maphash (lambda (id _)
                 (unless (memq id pending) (remhash id org-agent-approvals--fontified-diffs)))
               org-agent-approvals--fontified-diffs))
    (erase-buffer)
    (if (null proposals)
        (insert "Nothing waits for your approval.\n")
      (insert (substitute-command-keys
               (format "%d proposal(s) of background skills.  \
\\<org-agent-approvals-mode-map>\\[org-agent-approvals-approve-at-point] approve, \
\\[org-agent-approvals-deny-at-point] deny.\n\n"
                       (length proposals))))
      (mapc #'org-agent-approvals--insert proposals))
    (goto-char (point-min))
    (forward-line (1- line))))

(defun org-agent-approvals--refresh-if-shown ()
  "Refresh the approvals buffer if it exists."
  (when-let ((buffer (get-buffer org-agent-approvals-buffer-name)))
    (with-current-buffer buffer
      (org-agent-approvals--fill))))

;;;###autoload
(defun org-agent-approvals ()
  "Show what background skills proposed and wait for your approval.
Approve one to run it (one undo step, as in the chat), or deny it."
  (interactive)
  (org-agent--require-started)
  (let ((buffer (get-buffer-create org-agent-approvals-buffer-name)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'org-agent-approvals-mode)
        (org-agent-approvals-mode))
      ;; Previews of proposals queued before Emacs could make them (a restart).
      (dolist (p (org-agent-approvals-list))
        (unless (plist-get p :diff)
          (org-agent-approvals--preview (plist-get p :id) (plist-get p :action))))
      (org-agent-approvals--fill))
    (pop-to-buffer buffer)))

(defun org-agent-approvals--at-point ()
  "The id of the proposal at point."
  (or (get-text-property (point) 'org-agent-approval)
      (user-error "No proposal here")))

(defun org-agent-approvals-approve-at-point ()
  "Approve the proposal at point: run it."
  (interactive nil org-agent-approvals-mode)
  (let ((id (org-agent-approvals--at-point)))
    (org-agent-approvals-approve id)
    (message "org-agent: proposal #%d ran" id)))

(defun org-agent-approvals-deny-at-point ()
  "Deny the proposal at point."
  (interactive nil org-agent-approvals-mode)
  (let ((id (org-agent-approvals--at-point)))
    (org-agent-approvals-deny id)
    (message "org-agent: proposal #%d denied" id)))

(defun org-agent-approvals--move (search)
  "Go to the next proposal's start found by SEARCH (a property-search function)."
  (let ((here (get-text-property (point) 'org-agent-approval)))
    (when-let ((match (funcall search 'org-agent-approval here
                               (lambda (value prop) (and prop (not (eql value prop)))))))
      (goto-char (prop-match-beginning match)))))

(defun org-agent-approvals-next ()
  "Go to the next proposal."
  (interactive nil org-agent-approvals-mode)
  (org-agent-approvals--move #'text-property-search-forward))

(defun org-agent-approvals-previous ()
  "Go to the previous proposal."
  (interactive nil org-agent-approvals-mode)
  (org-agent-approvals--move #'text-property-search-backward))

(defun org-agent-approvals-refresh ()
  "Show the queue anew."
  (interactive nil org-agent-approvals-mode)
  (org-agent-approvals--fill))

(defun org-agent-approvals-open-queue ()
  "Open the approvals queue's Org file (every proposal, settled ones too)."
  (interactive nil org-agent-approvals-mode)
  (let ((file (org-agent--approvals-file)))
    (unless (and file (file-exists-p file))
      (user-error "The approvals queue has no file yet"))
    (find-file-read-only file)))

(provide 'org-agent-approvals)
;;; org-agent-approvals.el ends here
