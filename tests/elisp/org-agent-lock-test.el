;;; org-agent-lock-test.el --- Two Emacs sessions on one state directory -*- lexical-binding: t; -*-

;;; Commentary:

;; Two sessions of one user on one `org-agent-state-directory' (a daemon
;; and an `emacs -nw'): one writes, the other waits and says so in
;; `org-agent-status', and opens the store once the first lets go, even
;; when it is killed with SIGKILL mid-write; the waiting one killed
;; disturbs nothing.  Real child Emacs processes with the built module:
;; org-agent-kill-child.el (edits and saves in a loop) holds the
;; directory, org-agent-lock-child.el waits for it.

;;; Code:

(require 'org-agent-test-setup)

(defconst org-agent-lock-test-writer
  (expand-file-name "tests/elisp/org-agent-kill-child.el" org-agent-test-root)
  "The writing session: edits and saves the notes until killed.")

(defconst org-agent-lock-test-child
  (expand-file-name "tests/elisp/org-agent-lock-child.el" org-agent-test-root)
  "The waiting session.")

(defun org-agent-lock-test--start (file notes state)
  "Start the child Emacs of FILE on NOTES and STATE; return its process."
  (org-agent-test-start-session "org-agent-lock-session" file notes state "lock"))

(defun org-agent-lock-test--output (proc)
  "What PROC printed so far."
  (with-current-buffer (process-buffer proc) (buffer-string)))

(defun org-agent-lock-test--wait-for (proc regexp seconds)
  "Wait up to SECONDS for PROC to print a line matching REGEXP; return its match 1."
  (org-agent-test-wait
   (lambda () (let ((out (org-agent-lock-test--output proc)))
                (and (string-match regexp out) (match-string 1 out))))
   seconds))

(defun org-agent-lock-test--kill (proc)
  "SIGKILL PROC and wait until it is gone."
  (signal-process proc 'SIGKILL)
  (org-agent-test-wait (lambda () (not (process-live-p proc))) 30))

(ert-deftest org-agent-lock-one-writer-the-other-waits-even-through-sigkill ()
  "The second session waits while the first writes; SIGKILL either loses nothing."
  (let* ((notes (make-temp-file "org-agent-lock-notes" t))
         (state (make-temp-file "org-agent-lock-state" t))
         writer waiter)
    (unwind-protect
        (progn
          (org-agent-test-copy-demo-notes notes)
          (setq writer (org-agent-lock-test--start org-agent-lock-test-writer notes state))
          (should (org-agent-lock-test--wait-for writer "saved \\([0-9]+\\)" 120))
          ;; A waiting session killed: the writer goes on saving.
          (setq waiter (org-agent-lock-test--start org-agent-lock-test-child notes state))
          (should (org-agent-lock-test--wait-for waiter "^\\(waiting\\) " 60))
          (org-agent-lock-test--kill waiter)
          (let ((before (string-to-number
                         (org-agent-lock-test--wait-for writer "saved \\([0-9]+\\)\n\\'" 30))))
            (should (org-agent-test-wait
                     (lambda ()
                       (let ((out (org-agent-lock-test--output writer)))
                         (and (string-match "saved \\([0-9]+\\)\n\\'" out)
                              (> (string-to-number (match-string 1 out)) (+ before 5)))))
                     60)))
          ;; The second session: it waits, and says who holds the store.
          (setq waiter (org-agent-lock-test--start org-agent-lock-test-child notes state))
          (let ((status (org-agent-lock-test--wait-for waiter "^status \\(\".*\"\\)$" 60)))
            (should status)
            (should (string-match-p
                     (format "in use by another Emacs (Emacs process %d "
                             (process-id writer))
                     (car (read-from-string status)))))
          (should-not (string-search "open at once" (org-agent-lock-test--output waiter)))
          ;; The writer killed mid-save: the waiting session opens the store, which then
          ;; holds every file as it is on disk.
          (org-agent-lock-test--kill writer)
          (let ((open (org-agent-lock-test--wait-for waiter "^open \\((.*)\\)$" 120)))
            (should open)
            (let ((files (car (read-from-string open))))
              (should (>= (length files) 3))
              (dolist (f files)
                (should (equal (nth 1 f) (nth 2 f)))))))
      (dolist (p (list writer waiter))
        (when (and p (process-live-p p)) (org-agent-lock-test--kill p)))
      (delete-directory notes t)
      (delete-directory state t))))

(provide 'org-agent-lock-test)
;;; org-agent-lock-test.el ends here
