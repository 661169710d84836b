;;; org-agent-lock-child.el --- The second Emacs on one state directory -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by org-agent-lock-test.el as a child `emacs -Q --batch' while
;; another Emacs (org-agent-kill-child.el) holds the state directory
;; ORG_AGENT_KILL_STATE: starts org-agent there (module in
;; ORG_AGENT_KILL_MODULE), which must wait, prints "waiting" and what
;; `org-agent-status' shows, then keeps Emacs running until the store
;; opens (the holder was killed) and prints "open REPORT" with what the
;; store then holds of each file of ORG_AGENT_KILL_NOTES.  Output is
;; unbuffered: this child may be killed too.

;;; Code:

(defconst org-agent-lock-child-root
  (expand-file-name "../../" (file-name-directory load-file-name))
  "Root of the org-agent checkout.")

(add-to-list 'load-path (expand-file-name "elisp" org-agent-lock-child-root))
(setq org-agent-module-directory (getenv "ORG_AGENT_KILL_MODULE"))
(setq org-agent-state-directory (getenv "ORG_AGENT_KILL_STATE"))
(setq org-agent-directories (list (getenv "ORG_AGENT_KILL_NOTES")))
(setq org-agent-store-wait-interval 0.2
      print-escape-newlines t)
(require 'org)
(require 'org-agent)

(defun org-agent-lock-child-say (format-string &rest args)
  "Print FORMAT-STRING with ARGS on a line of its own, at once."
  (send-string-to-terminal (concat (apply #'format format-string args) "\n")))

(defun org-agent-lock-child-run ()
  "Wait for the store, then say what it holds."
  (if (org-agent--start)
      (org-agent-lock-child-say "open at once")
    (org-agent-lock-child-say "waiting %S" org-agent--store-waiting)
    (org-agent-status)
    (org-agent-lock-child-say "status %S"
                              (with-current-buffer "*org-agent-status*"
                                (buffer-substring-no-properties (point-min) (point-max))))
    (while (not org-agent--started)
      (accept-process-output nil 0.05))
    ;; The pass that compares the store with the files runs on a worker after the open.
    (let ((done nil)
          (deadline (+ (float-time) 60)))
      (org-agent-reconcile (lambda (_) (setq done t)))
      (while (and (not done) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (org-agent-lock-child-say
     "open %S"
     (mapcar (lambda (f)
               (list (file-name-nondirectory f)
                     (org-agent-count :file f :type 'headline)
                     (with-temp-buffer
                       (insert-file-contents f)
                       (let ((case-fold-search nil))
                         (how-many "^\\*+ " (point-min) (point-max))))))
             (directory-files (getenv "ORG_AGENT_KILL_NOTES") t "\\.org\\'")))))

(org-agent-lock-child-run)

(provide 'org-agent-lock-child)
;;; org-agent-lock-child.el ends here
