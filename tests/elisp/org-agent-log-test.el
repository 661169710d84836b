;;; org-agent-log-test.el --- ERT tests of *org-agent-log* in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; The log buffer copies only the entries logged since its last
;; refresh (`org-agent--log-since'), appends them, and leaves the old
;; lines alone; entries that fell out of the log unseen get a note.

;;; Code:

(require 'org-agent-test-setup)

(defvar org-agent-log-test--counter 0
  "How many entries the tests logged, to name each one apart.")

(defun org-agent-log-test--log (&optional count)
  "Log COUNT (default 1) new entries, each an ingest; return their names.
Each ingest is of a buffer of its own name (a newer ingest of one file
supersedes a running one); the module logs each as it finishes, before
its callback runs."
  (let ((buffer (generate-new-buffer "org-agent-log-test"))
        (pending 0)
        names)
    (unwind-protect
        (with-current-buffer buffer
          (insert "* A headline\n")
          (org-mode)
          (dotimes (_ (or count 1))
            (let ((name (format "org-agent-log-test-%d.org"
                                (cl-incf org-agent-log-test--counter))))
              (rename-buffer name)
              (push name names)
              (cl-incf pending)
              (org-agent-ingest-buffer nil t (lambda (_) (cl-decf pending)))))
          (should (org-agent-test-wait (lambda () (zerop pending)) 60)))
      (kill-buffer buffer))
    (nreverse names)))

(defun org-agent-log-test--line-of (name)
  "Return the start of the line of the log buffer that names NAME, or nil."
  (save-excursion
    (goto-char (point-min))
    (and (search-forward name nil t) (line-beginning-position))))

(defmacro org-agent-log-test--with-log (&rest body)
  "Run BODY in a fresh, shown *org-agent-log* that refreshes only on request."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-store
     (let ((org-agent-log-refresh-interval nil)
           (log nil))
       (unwind-protect
           (progn
             (when (get-buffer "*org-agent-log*") (kill-buffer "*org-agent-log*"))
             (setq log (org-agent-log))
             (with-current-buffer log ,@body))
         (when (buffer-live-p log) (kill-buffer log))))))

(ert-deftest org-agent-log-since-returns-only-newer-entries ()
  "`org-agent--log-since' returns the entries after a sequence number, none after the last."
  (org-agent-test-with-store
    (org-agent-log-test--log 3)
    (let* ((all (org-agent--log-since 0))
           (last-seq (car (car (last all)))))
      (should (>= (length all) 3))
      ;; Numbered one after the other, each (SEQ TIME-MS KIND MESSAGE).
      (should (cl-loop for (a b) on all while b always (= (car b) (1+ (car a)))))
      (should (cl-every (lambda (e) (and (integerp (nth 0 e)) (integerp (nth 1 e))
                                         (stringp (nth 2 e)) (stringp (nth 3 e))))
                        all))
      (should (null (org-agent--log-since last-seq)))
      (should (null (org-agent--log-since (* 2 last-seq))))
      (should (equal (org-agent--log-since (- last-seq 2)) (last all 2)))
      (let ((name (car (org-agent-log-test--log))))
        (let ((new (org-agent--log-since last-seq)))
          (should (= (car (car new)) (1+ last-seq)))
          (should (seq-find (lambda (e) (string-match-p (regexp-quote name) (nth 3 e))) new)))))))

(ert-deftest org-agent-log-refresh-appends-and-leaves-old-lines-alone ()
  "A refresh of the shown log appends the new entries; the old lines stay as they were."
  (org-agent-log-test--with-log
    (should (eq (window-buffer (selected-window)) log))
    (let* ((first (car (org-agent-log-test--log)))
           old-line marker)
      (should-not (org-agent-log-test--line-of first))
      (revert-buffer)
      (setq old-line (org-agent-log-test--line-of first))
      (should old-line)
      (should (null (org-agent--log-since org-agent-log--seq)))
      ;; Marks on the old line: a refresh that rewrote it would lose them.
      (let ((inhibit-read-only t))
        (put-text-property old-line (1+ old-line) 'org-agent-log-test-mark t))
      (setq marker (copy-marker old-line))
      (let ((line-text (buffer-substring-no-properties
                        old-line (save-excursion (goto-char old-line) (line-beginning-position 2))))
            (names (org-agent-log-test--log 2)))
        (should-not (org-agent-log-test--line-of (car names)))
        (revert-buffer)
        ;; After it (the oldest entries may have gone from the top, when earlier tests
        ;; filled the log: positions move, the marker follows).
        (dolist (name names)
          (should (> (org-agent-log-test--line-of name) marker)))
        (should (get-text-property marker 'org-agent-log-test-mark))
        (should (equal (buffer-substring-no-properties
                        marker (save-excursion (goto-char marker) (line-beginning-position 2)))
                       line-text))
        (should (= (org-agent-log-test--line-of first) marker))
        ;; Nothing new: a refresh changes nothing.
        (should (null (org-agent--log-since org-agent-log--seq)))
        (let ((tick (buffer-modified-tick)))
          (revert-buffer)
          (should (= tick (buffer-modified-tick))))
        ;; The buffer shows every entry the log has, each once, in order.
        (should (equal (buffer-substring-no-properties (point-min) (point-max))
                       (concat "#+TITLE: org-agent log\n\n"
                               (mapconcat #'org-agent-log--line (mapcar #'cdr (org-agent--log-since 0)) ""))))))))

(ert-deftest org-agent-log-notes-entries-that-fell-out-unseen ()
  "Entries the log dropped before the buffer showed them are noted, and the buffer stays bounded."
  (org-agent-log-test--with-log
    (org-agent-log-test--log)
    (revert-buffer)
    (let ((seen org-agent-log--seq)
          (capacity (org-agent--log-capacity))
          (header-end (+ (point-min) (length "#+TITLE: org-agent log\n\n"))))
      (should (> seen 0))
      (should-not (seq-find (lambda (ov) (overlay-get ov 'org-agent-log-missed))
                            (overlays-in (point-min) (point-max))))
      ;; More entries than the log keeps, unseen meanwhile.
      (org-agent-log-test--log (+ capacity 15))
      (revert-buffer)
      (should (= org-agent-log--count capacity))
      (should (equal (buffer-substring-no-properties (point-min) (point-max))
                     (concat "#+TITLE: org-agent log\n\n"
                             (mapconcat #'org-agent-log--line (mapcar #'cdr (org-agent--log-since 0)) ""))))
      (let* ((first-seq (get-text-property header-end 'org-agent-log-seq))
             (notes (seq-filter (lambda (ov) (overlay-get ov 'org-agent-log-missed))
                                (overlays-in (point-min) (point-max))))
             (note (car notes)))
        (should (= (length notes) 1))
        (should (> first-seq (1+ seen)))
        ;; Before the first entry the buffer shows: those between were never shown.
        (should (= (overlay-start note) header-end))
        (should (= (overlay-get note 'org-agent-log-missed) (- first-seq seen 1)))
        (should (string-match-p (format "^- %d entries fell out of the log"
                                        (- first-seq seen 1))
                                (overlay-get note 'before-string)))
        ;; One more entry: the oldest goes from the top, and its note with it.
        (let ((name (car (org-agent-log-test--log))))
          (revert-buffer)
          (should (org-agent-log-test--line-of name))
          (should (= org-agent-log--count capacity))
          (should (= (get-text-property header-end 'org-agent-log-seq) (1+ first-seq)))
          (should-not (overlay-buffer note)))))))

(provide 'org-agent-log-test)
;;; org-agent-log-test.el ends here
