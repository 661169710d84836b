;;; org-agent-kill-test.el --- The store survives SIGKILL at any moment -*- lexical-binding: t; -*-

;;; Commentary:

;; A child Emacs (org-agent-kill-child.el) edits and saves Org files in
;; a loop, so the after-save hook re-ingests them and the store's writer
;; thread appends to the log; it is killed with SIGKILL at seeded random
;; moments, some during its start (loading the log, compacting it).
;; After each kill, the store left on disk must open without being set
;; aside as corrupt, and once brought up to date with the files on disk
;; the way org-agent does at start (files whose modification time or size
;; changed are read again), hold exactly what a rebuild from those files
;; holds: every file's nodes with their ids, titles, hashes and positions.
;; The next child starts on the store as the kill left it.

;;; Code:

(require 'org-agent-test-setup)

(defvar org-agent-kill-test-kills 20
  "How many times the child is killed.")

(defconst org-agent-kill-test-child
  (expand-file-name "tests/elisp/org-agent-kill-child.el" org-agent-test-root)
  "The program of the child Emacs.")

(defun org-agent-kill-test--notes (dir)
  "Fill DIR with the Org files the child edits: the demo notes and larger files."
  (org-agent-test-copy-demo-notes dir)
  (dotimes (i 3)
    (with-temp-file (expand-file-name (format "big-%d.org" i) dir)
      (insert "#+TITLE: Big " (number-to-string i) "\n#+FILETAGS: :big:\n")
      (dotimes (j 150)
        (insert (format "* %s Task %d-%d :t%d:\n:PROPERTIES:\n:ID: big-%d-%d\n:END:\n"
                        (if (zerop (% j 3)) "DONE" "TODO") i j (% j 7) i j))
        (insert (format "SCHEDULED: <2024-01-%02d>\nSome text of task %d.\n" (1+ (% j 28)) j))
        (when (zerop (% j 5))
          (insert (format "** Sub %d\n#+begin_src emacs-lisp\n(+ 1 %d)\n#+end_src\n" j j)))))))

(defun org-agent-kill-test--dump (files)
  "Return what the current store holds for FILES: each file's node plists."
  (mapcar (lambda (f) (cons f (org-agent--query (list :file f))))
          files))

(defun org-agent-kill-test--run-child (notes state seed delay &optional after-save)
  "Start the child on NOTES and STATE with SEED; SIGKILL it after DELAY seconds.
With AFTER-SAVE, the DELAY counts from its first save (so some kills
land among saves even where starting takes longer than the delays).
Return the child's output."
  (let* ((proc (org-agent-test-start-session "org-agent-kill-child" org-agent-kill-test-child
                                             notes state seed))
         (buffer (process-buffer proc)))
    (when after-save
      (let ((deadline (+ (float-time) 120)))
        (while (and (process-live-p proc) (< (float-time) deadline)
                    (not (with-current-buffer buffer
                           (string-search "saved " (buffer-string)))))
          (accept-process-output proc 0.01))))
    (let ((deadline (+ (float-time) delay)))
      (while (and (process-live-p proc) (< (float-time) deadline))
        (accept-process-output proc 0.01)))
    (unless (process-live-p proc)
      (error "The child exited by itself: %s" (with-current-buffer buffer (buffer-string))))
    (signal-process proc 'SIGKILL)
    (while (process-live-p proc)
      (accept-process-output proc 0.01))
    (prog1 (with-current-buffer buffer (buffer-string))
      (kill-buffer buffer))))

(ert-deftest org-agent-kill-test-store-equals-a-rebuild-after-every-kill ()
  "SIGKILL at random moments never leaves a store that differs from a rebuild."
  (let* ((notes (make-temp-file "org-agent-kill-notes" t))
         (state (make-temp-file "org-agent-kill-state" t))
         (copy (make-temp-file "org-agent-kill-copy" t))
         (fresh (make-temp-file "org-agent-kill-fresh" t))
         (saves 0) (torn 0) (killed-starting 0))
    (unwind-protect
        (progn
          (org-agent-kill-test--notes notes)
          (random "org-agent-kill-test")
          (dotimes (k org-agent-kill-test-kills)
            ;; From 0.3 s (still starting) to 2.5 s (hundreds of saves in).
            (let* ((delay (+ 0.3 (/ (random 2200) 1000.0)))
                   (output (org-agent-kill-test--run-child
                            notes state (format "seed-%d" k) delay
                            ;; The last quarter of the kills always lands among saves.
                            (>= k (* 3 (/ org-agent-kill-test-kills 4)))))
                   (n (if (string-match "saved \\([0-9]+\\)\n[^\n]*\\'" output)
                          (string-to-number (match-string 1 output))
                        0))
                   (files (directory-files notes t "\\.org\\'")))
              (setq saves (+ saves n))
              (when (zerop n) (setq killed-starting (1+ killed-starting)))
              (should-not (directory-files state nil "corrupt"))
              ;; Check a copy, so the next child starts on the store exactly as the kill
              ;; left it.
              (delete-directory copy t)
              (copy-directory state copy nil nil t)
              (let ((report (org-agent--store-open copy)))
                (should-not (plist-get report :rebuilt))
                (when (plist-get report :torn-tail) (setq torn (1+ torn))))
              (dolist (f files) (org-agent--ingest-file f nil))
              (let ((opened (org-agent-kill-test--dump files)))
                (org-agent--store-close)
                (delete-directory fresh t)
                (make-directory fresh)
                (org-agent--store-open fresh)
                (dolist (f files) (org-agent--ingest-file f t))
                (let ((rebuilt (org-agent-kill-test--dump files)))
                  (org-agent--store-close)
                  ;; The comparison is not of empty stores: the big files alone hold
                  ;; hundreds of headlines, whatever the child saved before the kill (the
                  ;; first file in name order, README.org, has none until the child adds
                  ;; some, so it cannot stand for all).
                  (should (> (apply #'+ (mapcar (lambda (f) (length (cdr f))) rebuilt))
                             (* 3 150)))
                  (unless (equal opened rebuilt)
                    (ert-fail
                     (list (format "kill %d (after %.2f s, %d saves): the store differs from a rebuild"
                                   k delay n)
                           (cl-loop for (f . nodes) in opened
                                    for (_ . want) in rebuilt
                                    unless (equal nodes want)
                                    return (list f (cl-set-difference nodes want :test #'equal)
                                                 (cl-set-difference want nodes :test #'equal))))))))))
          (message "kill test: %d kills (%d while starting), %d saves, %d torn tails cut"
                   org-agent-kill-test-kills killed-starting saves torn)
          (should (> saves 0)))
      (ignore-errors (org-agent--store-close))
      (dolist (d (list notes state copy fresh))
        (delete-directory d t)))))

(provide 'org-agent-kill-test)
;;; org-agent-kill-test.el ends here
