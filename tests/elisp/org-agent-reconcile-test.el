;;; org-agent-reconcile-test.el --- The store follows the disk without a save -*- lexical-binding: t; -*-

;;; Commentary:

;; Files changed behind Emacs's back reach the store with no save in
;; Emacs: written or deleted by another process while `org-agent-mode'
;; is on (the periodic comparison, `org-agent-watch-interval'), and
;; changed while the store was closed (the comparison after an open).

;;; Code:

(require 'org-agent-test-setup)

(defconst org-agent-reconcile-test-demo
  (expand-file-name "demo/notes/" org-agent-test-root)
  "The demo notes shipped with the package.")

(defmacro org-agent-reconcile-test-with-notes (&rest body)
  "Run BODY with a fresh store and a copy of the demo notes bound to `notes'."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-store
     (let ((notes (file-name-as-directory (make-temp-file "org-agent-notes" t))))
       (unwind-protect
           (progn
             (dolist (f (directory-files org-agent-reconcile-test-demo t "\\.org\\'"))
               (copy-file f notes))
             ,@body)
         (org-agent-test-kill-file-buffers notes)
         (delete-directory notes t)))))

(defun org-agent-reconcile-test-titles (file)
  "Return the headline titles the store has for FILE."
  (mapcar (lambda (n) (plist-get n :title))
          (org-agent-query :file file :type 'headline)))

(defun org-agent-reconcile-test-shell (command)
  "Run the shell COMMAND in another process, as a sync tool would write."
  (should (eql 0 (call-process "sh" nil nil nil "-c" command))))

(ert-deftest org-agent-watch-takes-in-files-written-and-deleted-elsewhere ()
  "With `org-agent-mode' on, another process's writes reach the store unsaved."
  (org-agent-reconcile-test-with-notes
    (let* ((org-agent-directories (list notes))
           (org-agent-watch-interval 0.2)
           (pulled (expand-file-name "pulled.org" notes))
           (tasks (expand-file-name "tasks.org" notes))
           events
           (org-agent-ingest-functions
            (cons (lambda (e) (push e events)) org-agent-ingest-functions)))
      (org-agent-mode 1)
      (unwind-protect
          (progn
            (should (timerp org-agent--watch-timer))
            (should (org-agent-test-wait
                     (lambda () (= (plist-get (org-agent-store-stats) :files) 5))))
            ;; A new file, written by another process into a file no buffer visits.
            (org-agent-reconcile-test-shell
             (format "printf '* Pulled from elsewhere\\n** Its child\\n' > %s"
                     (shell-quote-argument pulled)))
            (should (org-agent-test-wait
                     (lambda () (org-agent-reconcile-test-titles pulled)) 30))
            (should (equal (org-agent-reconcile-test-titles pulled)
                           '("Pulled from elsewhere" "Its child")))
            ;; Views learn of it as of a save's ingest.
            (should (seq-find (lambda (e) (and (eq (plist-get e :type) 'ingested)
                                               (equal (plist-get e :file) pulled)
                                               (plist-get e :changed)))
                              events))
            ;; A file the store had, rewritten elsewhere.
            (let ((coding-system-for-write 'utf-8-unix))
              (write-region "* Rewritten by another editor\n" nil tasks nil 'silent))
            (should (org-agent-test-wait
                     (lambda () (equal (org-agent-reconcile-test-titles tasks)
                                       '("Rewritten by another editor")))
                     30))
            ;; Deleted elsewhere: it leaves the store, nodes and all.
            (org-agent-reconcile-test-shell
             (format "rm %s" (shell-quote-argument pulled)))
            (should (org-agent-test-wait
                     (lambda () (null (org-agent-query :file pulled))) 30))
            (should (seq-find (lambda (e) (and (eq (plist-get e :type) 'removed)
                                               (equal (plist-get e :file) pulled)
                                               (eql (plist-get e :nodes) 3)))
                              events))
            (should (= (plist-get (org-agent-store-stats) :files) 5)))
        (org-agent-mode -1))
      (should-not org-agent--watch-timer))))

(ert-deftest org-agent-watch-interval-nil-turns-the-watch-off ()
  "With `org-agent-watch-interval' nil, the mode compares only at the open."
  (org-agent-reconcile-test-with-notes
    (let ((org-agent-directories (list notes))
          (org-agent-watch-interval nil))
      (org-agent-mode 1)
      (unwind-protect
          (should-not org-agent--watch-timer)
        (org-agent-mode -1)))))

(ert-deftest org-agent-reopening-the-store-catches-up-without-a-save ()
  "Files changed while Emacs was not running are in the store after an open."
  (org-agent-reconcile-test-with-notes
    (let ((state (make-temp-file "org-agent-reopen" t))
          (org-agent-directories (list notes))
          (tasks (expand-file-name "tasks.org" notes))
          (journal (expand-file-name "journal.org" notes))
          (added (expand-file-name "added.org" notes)))
      (unwind-protect
          (progn
            ;; The last session: every file ingested, the store closed.
            (org-agent--store-open state)
            (dolist (f (directory-files notes t "\\.org\\'")) (org-agent-ingest-file f))
            (org-agent-flush)
            (should (org-agent-reconcile-test-titles journal))
            (org-agent--store-close)
            ;; Meanwhile, with Emacs not running: a pull changed, deleted and added.
            (org-agent-reconcile-test-shell
             (format "printf '* Changed while Emacs was away\\n' > %s && rm %s && \
printf '* Added while Emacs was away\\n' > %s"
                     (shell-quote-argument tasks) (shell-quote-argument journal)
                     (shell-quote-argument added)))
            ;; The first command of the next session opens the store.
            (let ((org-agent--started nil)
                  (org-agent-state-directory state))
              (should (org-agent--start))
              (should (org-agent-test-wait
                       (lambda ()
                         (and (equal (org-agent-reconcile-test-titles tasks)
                                     '("Changed while Emacs was away"))
                              (null (org-agent-query :file journal))
                              (equal (org-agent-reconcile-test-titles added)
                                     '("Added while Emacs was away"))))
                       30))
              (should (= (plist-get (org-agent-store-stats) :files) 5))
              ;; The open's pass has ended (its changes can show before its last event,
              ;; and a pass asked for meanwhile joins it): nothing left for a later one.
              (should (org-agent-test-wait (lambda () (null org-agent--reconcile-request)) 30))
              (let (done)
                (org-agent-reconcile (lambda (e) (setq done e)))
                (should (org-agent-test-wait (lambda () done) 30))
                (should (eq (plist-get done :type) 'reconciled))
                (should (equal (list (plist-get done :ingested) (plist-get done :removed)
                                     (plist-get done :errors))
                               '(0 0 nil))))))
        (org-agent--store-close)
        (delete-directory state t)))))

(provide 'org-agent-reconcile-test)
;;; org-agent-reconcile-test.el ends here
