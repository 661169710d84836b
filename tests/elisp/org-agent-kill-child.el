;;; org-agent-kill-child.el --- The Emacs the kill test kills -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by org-agent-kill-test.el as a child `emacs -Q --batch': starts
;; org-agent on the state directory and module directory it is given
;; (environment variables ORG_AGENT_KILL_STATE, ORG_AGENT_KILL_MODULE),
;; then edits and saves the Org files of ORG_AGENT_KILL_NOTES in a loop,
;; as fast as it can, so that the after-save hook re-ingests them and the
;; store's writer thread appends to its log, until it is killed with
;; SIGKILL.  It prints "open STATS" once the store is open and "saved N"
;; after each save, unbuffered (SIGKILL loses what stdio still holds).
;; ORG_AGENT_KILL_SEED seeds its edits.

;;; Code:

(require 'cl-lib)

(defconst org-agent-kill-child-root
  (expand-file-name "../../" (file-name-directory load-file-name))
  "Root of the org-agent checkout.")

(add-to-list 'load-path (expand-file-name "elisp" org-agent-kill-child-root))
(setq org-agent-module-directory (getenv "ORG_AGENT_KILL_MODULE"))
(setq org-agent-state-directory (getenv "ORG_AGENT_KILL_STATE"))
(setq make-backup-files nil
      auto-save-default nil
      create-lockfiles nil)
(require 'org)
(require 'org-agent)

(defun org-agent-kill-child-edit ()
  "Make one random edit of the Org text in the current buffer."
  (let ((lines (count-lines (point-min) (point-max))))
    (goto-char (point-min))
    (forward-line (random (max 1 lines)))
    (pcase (random 6)
      (0 (insert (format "* %s headline %d :k%d:\n"
                         (nth (random 3) '("TODO" "DONE" "NEXT"))
                         (random 100000) (random 5))))
      (1 (insert (format "** sub %d\n:PROPERTIES:\n:ID: kill-%d\n:END:\nbody %d\n"
                         (random 1000) (random 100000) (random 1000))))
      (2 (when (< lines 2000) (insert (format "text line %d\n" (random 100000)))))
      (3 (delete-region (line-beginning-position)
                        (min (point-max) (1+ (line-end-position)))))
      (4 (when (re-search-forward "^\\*+ " nil t)
           (insert (format "renamed%d " (random 1000)))))
      (_ (when (re-search-forward "^\\*+ \\(TODO\\|DONE\\) " nil t)
           (replace-match (if (equal (match-string 1) "TODO") "DONE" "TODO")
                          t t nil 1))))
    ;; Files stay around the same size, so a run's batches stay alike.
    (when (> (buffer-size) 40000)
      (delete-region (point-min) (save-excursion (goto-char (point-min))
                                                 (forward-line 50) (point))))))

(defun org-agent-kill-child-run ()
  "Start org-agent, then edit and save the notes until killed."
  (random (getenv "ORG_AGENT_KILL_SEED"))
  (org-agent--start)
  (send-string-to-terminal (format "open %S\n" (org-agent-store-stats)))
  (add-hook 'after-save-hook #'org-agent--after-save)
  (let* ((dir (getenv "ORG_AGENT_KILL_NOTES"))
         (buffers (mapcar #'find-file-noselect
                          (directory-files dir t "\\.org\\'")))
         (n 0))
    (while t
      (with-current-buffer (nth (random (length buffers)) buffers)
        (org-agent-kill-child-edit)
        (let ((inhibit-message t))
          (save-buffer)))
      (setq n (1+ n))
      (send-string-to-terminal (format "saved %d\n" n))
      ;; Let the wake-up pipe's filter drain the workers' events now and then.
      (accept-process-output nil 0.001))))

(org-agent-kill-child-run)

(provide 'org-agent-kill-child)
;;; org-agent-kill-child.el ends here
