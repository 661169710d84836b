;;; org-agent-firstrun-test.el --- What a new user meets first, in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; The first minutes of a new user: semantic search and embedding say
;; what is really missing (nothing marked EMBED t, or marked but not
;; embedded yet), against the scripted test server as the embedding
;; server; the log buffer follows the log while it is shown.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-test-server)
(require 'org-agent)

(defconst org-agent-firstrun-test-notes
  "* Garden\nTulips and roses.\n* Boat\nSails and ropes.\n"
  "Notes with nothing marked for embedding.")

(defconst org-agent-firstrun-test-marked-notes
  "* Garden\n:PROPERTIES:\n:EMBED: t\n:END:\nTulips and roses.\n* Boat\nSails and ropes.\n"
  "Notes with one headline marked for embedding.")

(defmacro org-agent-firstrun-test-with-notes (text &rest body)
  "Run BODY with a fresh store holding the Org file TEXT and an embedding server.
The file is bound to `file', the test server's port to `port'; the
embedding backend is the test server."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* ((file (make-temp-file "org-agent-firstrun" nil ".org" ,text))
            (port (org-agent-test-start-server))
            (org-agent-embedding-backend
             `(:type openai :url ,(format "http://127.0.0.1:%d/v1" port) :model "e"))
            (org-agent-embed-all nil)
            (message-log-max t))
       (ignore port)
       (unwind-protect
           (progn (org-agent-ingest-file file) ,@body)
         (org-agent-test-server-stop)
         (delete-file file)))))

(defun org-agent-firstrun-test--messages-mark ()
  "Where the next message will start in *Messages*."
  (with-current-buffer (messages-buffer) (point-max)))

(defun org-agent-firstrun-test--messages-since (mark)
  "The messages logged since MARK."
  (with-current-buffer (messages-buffer) (buffer-substring-no-properties mark (point-max))))

(defun org-agent-firstrun-test--embed ()
  "Run `org-agent-embed-notes' as a user would; return its final event."
  (let ((done nil))
    (org-agent-embed-notes (lambda (event) (setq done event)))
    (should (org-agent-test-wait (lambda () done) 30))
    done))

(defun org-agent-firstrun-test--vector (&rest xs)
  "An OpenAI embedding response with the one vector XS."
  (list :body `((object . "list")
                (data . [((object . "embedding") (index . 0) (embedding . ,(vconcat xs)))])
                (model . "e"))))

(ert-deftest org-agent-firstrun-nothing-marked-says-so ()
  "With no headline marked EMBED t, search and embedding name the real cause and the fix."
  (org-agent-firstrun-test-with-notes org-agent-firstrun-test-notes
    (let ((err (should-error (org-agent-semantic-search "flowers") :type 'user-error)))
      (should (string-match-p "none of the 2 headlines is marked" (cadr err)))
      (should (string-match-p "EMBED with the value t" (cadr err)))
      (should (string-match-p "org-agent-embed-all" (cadr err)))
      (should-not (string-match-p "org-agent-embed-notes" (cadr err))))
    (let ((mark (org-agent-firstrun-test--messages-mark))
          (event (org-agent-firstrun-test--embed)))
      (should (eq (plist-get event :type) 'embedded))
      (should (= (plist-get event :candidates) 0))
      (let ((said (org-agent-firstrun-test--messages-since mark)))
        (should (string-match-p "org-agent: nothing to embed: none of the 2 headlines is marked" said))
        (should (string-match-p "org-agent-embed-all" said))
        (should-not (string-match-p "0 notes embedded" said))))
    ;; Nothing was sent to the embedding server.
    (should (null (org-agent-test-server-requests)))))

(ert-deftest org-agent-firstrun-empty-store-says-so ()
  "With every headline to embed but none in the store, that is what is said."
  (org-agent-test-with-store
    (let ((org-agent-embedding-backend '(:type openai :url "http://127.0.0.1:9/v1" :model "e"))
          (org-agent-embed-all t))
      (let ((err (should-error (org-agent-semantic-search "flowers") :type 'user-error)))
        (should (string-match-p "the store has no headlines yet" (cadr err)))
        (should (string-match-p "org-agent-directories" (cadr err)))))))

(ert-deftest org-agent-firstrun-marked-but-not-embedded-says-so ()
  "Marked notes not embedded yet: search says so; once embedded, search finds them."
  (org-agent-firstrun-test-with-notes org-agent-firstrun-test-marked-notes
    (let ((mark (org-agent-firstrun-test--messages-mark)))
      (org-agent-semantic-search "flowers")
      (should (org-agent-test-wait
               (lambda ()
                 (string-match-p "org-agent: 1 headline marked EMBED t, but none is embedded yet: M-x org-agent-embed-notes"
                                 (org-agent-firstrun-test--messages-since mark)))
               30)))
    (apply #'org-agent-test-server-push (org-agent-firstrun-test--vector 1.0 0.0 0.0))
    (let ((mark (org-agent-firstrun-test--messages-mark)))
      (should (= 1 (plist-get (org-agent-firstrun-test--embed) :embedded)))
      (should (string-match-p "org-agent: 1 notes embedded, 0 dropped; 1 in the index"
                              (org-agent-firstrun-test--messages-since mark))))
    (let ((mark (org-agent-firstrun-test--messages-mark)))
      (org-agent-firstrun-test--embed)
      (should (string-match-p "org-agent: nothing new to embed; 1 in the index"
                              (org-agent-firstrun-test--messages-since mark))))
    (when (get-buffer org-agent-semantic-results-buffer)
      (kill-buffer org-agent-semantic-results-buffer))
    (apply #'org-agent-test-server-push (org-agent-firstrun-test--vector 1.0 0.0 0.0))
    (org-agent-semantic-search "flowers")
    (should (org-agent-test-wait
             (lambda ()
               (when-let ((b (get-buffer org-agent-semantic-results-buffer)))
                 (string-match-p "^1\\.00  Garden" (with-current-buffer b (buffer-string)))))
             30))
    ;; Only the marked headline was embedded, then the query.
    (let ((inputs (mapcar (lambda (r) (cdr (assoc "input" r))) (org-agent-test-server-requests))))
      (should (= (length inputs) 2))
      (should (= (length (car inputs)) 1))
      (should (string-prefix-p "Garden" (caar inputs)))
      (should (equal (cadr inputs) '("flowers"))))))

;;;; The log

(defun org-agent-firstrun-test--log-text ()
  "The text of *org-agent-log*."
  (with-current-buffer "*org-agent-log*" (buffer-string)))

(ert-deftest org-agent-firstrun-log-follows-the-log ()
  "*org-agent-log* shows new entries while it is shown, without calling the command again."
  (org-agent-test-with-store
    (let* ((org-agent-log-refresh-interval 0.05)
           (files (list (make-temp-file "org-agent-log-one" nil ".org" "* One\n")
                        (make-temp-file "org-agent-log-two" nil ".org" "* Two\n")
                        (make-temp-file "org-agent-log-three" nil ".org" "* Three\n")))
           (shown (lambda (file)
                    (string-match-p (regexp-quote (file-name-nondirectory file))
                                    (org-agent-firstrun-test--log-text))))
           (ingest (lambda (file)
                     (with-current-buffer (find-file-noselect file)
                       (org-agent-ingest-buffer nil t))))
           (log nil))
      (unwind-protect
          (progn
            (when (get-buffer "*org-agent-log*") (kill-buffer "*org-agent-log*"))
            (setq log (org-agent-log))
            (should (eq (window-buffer (selected-window)) log))
            (with-current-buffer log
              (should (derived-mode-p 'org-agent-log-mode))
              (should (timerp org-agent-log--timer))
              (should (eobp))
              (should (eq (key-binding "g") #'revert-buffer)))
            (should-not (funcall shown (nth 0 files)))
            ;; A worker logs the ingest; the shown buffer follows, point stays at the end.
            (funcall ingest (nth 0 files))
            (should (org-agent-test-wait (lambda () (funcall shown (nth 0 files))) 30))
            (with-current-buffer log
              (should (eobp))
              (should (= (window-point (get-buffer-window log)) (point-max)))
              ;; Point away from the end stays on its text.
              (goto-char (point-max))
              (forward-line -1)
              (set-window-point (get-buffer-window log) (point))
              (let ((line (buffer-substring (line-beginning-position) (line-end-position))))
                (funcall ingest (nth 1 files))
                (should (org-agent-test-wait (lambda () (funcall shown (nth 1 files))) 30))
                (should (equal (buffer-substring (line-beginning-position) (line-end-position))
                               line))
                (should-not (eobp))))
            ;; Hidden, it stops refreshing; `g' refreshes it anyway.
            (let ((timer (buffer-local-value 'org-agent-log--timer log)))
              (switch-to-buffer (get-buffer-create "*scratch*"))
              (should (org-agent-test-wait
                       (lambda () (null (buffer-local-value 'org-agent-log--timer log))) 10))
              (should-not (memq timer timer-list)))
            (funcall ingest (nth 2 files))
            (should (org-agent-test-wait
                     (lambda ()
                       (with-current-buffer log (revert-buffer))
                       (funcall shown (nth 2 files)))
                     30))
            ;; Shown again, it follows the log again; killed, its timer is gone.
            (switch-to-buffer log)
            (should (memq #'org-agent-log--shown window-buffer-change-functions))
            (org-agent-log--shown (selected-window))
            (let ((timer (buffer-local-value 'org-agent-log--timer log)))
              (should (memq timer timer-list))
              (kill-buffer log)
              (should-not (memq timer timer-list))))
        (when (buffer-live-p log) (kill-buffer log))
        (dolist (f files)
          (when-let ((b (get-file-buffer f))) (kill-buffer b))
          (delete-file f))))))

(ert-deftest org-agent-firstrun-log-keeps-up-when-old-entries-fall-off ()
  "When the log ring drops its oldest entries, the shown buffer drops them too."
  (org-agent-test-with-store
    (let ((org-agent-log-refresh-interval nil)
          (buffer (generate-new-buffer "org-agent-log-ring.org"))
          (log (get-buffer-create "*org-agent-log*")))
      (unwind-protect
          (progn
            (with-current-buffer log
              (org-agent-log-mode)
              (org-agent-log--refresh))
            (with-current-buffer buffer
              (insert "* A headline\n")
              (org-mode)
              ;; More new files than the log keeps (500), each ingest logged by a worker
              ;; (each under its own name: a newer ingest of a file supersedes a running one).
              (let ((pending 0))
                (dotimes (i 520)
                  (rename-buffer (format "org-agent-log-ring-%d.org" i))
                  (cl-incf pending)
                  (org-agent-ingest-buffer nil t (lambda (_) (cl-decf pending))))
                (should (org-agent-test-wait (lambda () (zerop pending)) 60))))
            (with-current-buffer log
              (org-agent-log--refresh)
              (let ((entries (mapcar #'cdr (org-agent--log-since 0))))
                (should (= (length entries) 500))
                (should (equal (buffer-string)
                               (concat "#+TITLE: org-agent log\n\n"
                                       (mapconcat #'org-agent-log--line entries "")))))))
        (kill-buffer buffer)
        (kill-buffer log)))))

(provide 'org-agent-firstrun-test)
;;; org-agent-firstrun-test.el ends here
