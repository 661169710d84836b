;;; org-agent-test-notes.el --- Tests over a notes directory of real files -*- lexical-binding: t; -*-

;;; Commentary:

;; A notes directory of real Org files ingested into a fresh store, and
;; running Emacs actions on them: for the tests of the verbs, the scans
;; and whatever else edits notes.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-actuator)

(defmacro org-agent-test-with-notes-dir (files &rest body)
  "Run BODY with a fresh store and FILES written into a notes directory.
FILES is an alist (NAME . TEXT); each is ingested.  `dir' is bound to
the directory, which is `org-agent-directories'; `path' is a function
from a NAME to its file."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* ((dir (file-name-as-directory (file-truename (make-temp-file "org-agent-verbs" t))))
            (org-agent-directories (list dir))
            (org-id-locations-file (expand-file-name ".org-id-locations" dir))
            (org-id-locations (make-hash-table :test #'equal))
            (org-id-files nil)
            (path (lambda (name) (expand-file-name name dir))))
       (unwind-protect
           (progn
             (dolist (f ,files)
               (with-temp-file (funcall path (car f)) (insert (cdr f)))
               (org-agent-ingest-file (funcall path (car f))))
             ,@body)
         (dolist (b (buffer-list))
           (when (and (buffer-file-name b) (file-in-directory-p (buffer-file-name b) dir))
             (with-current-buffer b (set-buffer-modified-p nil))
             (kill-buffer b)))
         (delete-directory dir t)))))

(defun org-agent-test-act (&rest args)
  "Run the Emacs action made of ARGS; fail the test on an :error result."
  (let ((result (org-agent-actuator-run (append '(:type :request :target :emacs) args))))
    (should (equal (list (plist-get result :status) (plist-get result :message))
                   (list :ok (plist-get result :message))))
    result))

(defun org-agent-test-act-refused (&rest args)
  "The :error message of the Emacs action made of ARGS (the test fails if it ran)."
  (let ((result (org-agent-actuator-run (append '(:type :request :target :emacs) args))))
    (should (eq (plist-get result :status) :error))
    (plist-get result :message)))

(defun org-agent-test-file-text (file)
  "FILE's text on disk."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(defun org-agent-test-undo-in (file)
  "Undo the last step in FILE's buffer."
  (with-current-buffer (get-file-buffer file)
    (undo-boundary)
    (let ((last-command nil)) (undo))))

(defun org-agent-test-id-of (title)
  "The store id of the node titled TITLE."
  (plist-get (seq-find (lambda (n) (equal (plist-get n :title) title))
                       (org-agent-query :type 'headline))
             :id))

(provide 'org-agent-test-notes)
;;; org-agent-test-notes.el ends here
