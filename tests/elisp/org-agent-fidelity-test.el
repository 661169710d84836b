;;; org-agent-fidelity-test.el --- The store against org-element, over the corpus -*- lexical-binding: t; -*-

;;; Commentary:

;; For every headline of every file in the shared corpus, the store
;; must report the same title, TODO keyword, priority, own tags,
;; properties and planning as `org-element' in this same Emacs.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-element)

(defun org-agent-fidelity--element-properties (hl)
  "Return the property drawer entries of headline HL as a sorted alist."
  (let ((plist (cadr hl)) out)
    (while plist
      (let ((key (symbol-name (car plist))) (value (cadr plist)))
        (when (and (string-prefix-p ":" key)
                   (string= key (upcase key))
                   (stringp value))
          (push (cons (substring key 1) value) out)))
      (setq plist (cddr plist)))
    (sort out (lambda (a b) (or (string< (car a) (car b))
                                (and (string= (car a) (car b)) (string< (cdr a) (cdr b))))))))

(defun org-agent-fidelity--ts (hl key)
  "Return the raw value of planning timestamp KEY of headline HL."
  (let ((ts (org-element-property key hl)))
    (and ts (org-element-property :raw-value ts))))

(defun org-agent-fidelity--oracle (file)
  "Return what org-element reports for each headline of FILE, in order."
  (with-temp-buffer
    (let ((enable-local-variables nil)
          (default-directory (file-name-directory file))
          ;; "#+STARTUP: align" realigns tables when Org starts, which moves text
          ;; in the buffer; the file on disk is what we compare with.
          (org-startup-options (cl-remove "align" org-startup-options
                                          :key #'car :test #'equal)))
      (insert-file-contents file)
      (delay-mode-hooks (org-mode))
      (org-element-map (org-element-parse-buffer 'headline) 'headline
        (lambda (hl)
          (list :begin (org-element-property :begin hl)
                :title (org-element-property :raw-value hl)
                :todo (org-element-property :todo-keyword hl)
                :priority (org-element-property :priority hl)
                :tags (mapcar #'substring-no-properties (org-element-property :tags hl))
                :properties (org-agent-fidelity--element-properties hl)
                :scheduled (org-agent-fidelity--ts hl :scheduled)
                :deadline (org-agent-fidelity--ts hl :deadline)
                :closed (org-agent-fidelity--ts hl :closed)))))))

(defun org-agent-fidelity--ours (file)
  "Return what the store reports for each headline of FILE, in order."
  (org-agent-ingest-file file t)
  (mapcar (lambda (n)
            (list :begin (plist-get n :begin)
                  :title (plist-get n :title)
                  :todo (plist-get n :todo)
                  :priority (plist-get n :priority)
                  :tags (plist-get n :tags)
                  :properties (sort (copy-sequence (plist-get n :properties))
                                    (lambda (a b) (or (string< (car a) (car b))
                                                      (and (string= (car a) (car b))
                                                           (string< (cdr a) (cdr b))))))
                  :scheduled (plist-get n :scheduled)
                  :deadline (plist-get n :deadline)
                  :closed (plist-get n :closed)))
          (org-agent-query :file file :type 'headline)))

(defconst org-agent-fidelity--fields
  '(:begin :title :todo :priority :tags :properties :scheduled :deadline :closed)
  "The fields compared, in the order mismatches are reported.")

(defun org-agent-fidelity-compare (files)
  "Compare store and org-element over FILES.
Return (HEADLINES . MISMATCHES), each mismatch (FILE BEGIN FIELD OURS THEIRS)."
  (let ((headlines 0) mismatches)
    (dolist (file files)
      (let ((theirs (org-agent-fidelity--oracle file))
            (ours (org-agent-fidelity--ours file)))
        (setq headlines (+ headlines (length theirs)))
        (unless (= (length theirs) (length ours))
          (push (list file 0 :count (length ours) (length theirs)) mismatches))
        (cl-loop for a in ours for b in theirs
                 do (dolist (field org-agent-fidelity--fields)
                      (unless (equal (plist-get a field) (plist-get b field))
                        (push (list file (plist-get b :begin) field
                                    (plist-get a field) (plist-get b field))
                              mismatches))))))
    (cons headlines (nreverse mismatches))))

(ert-deftest org-agent-fidelity-corpus ()
  "Every headline of the shared corpus reads as org-element reads it."
  (org-agent-test-with-store
    (let* ((files (org-agent-test-corpus-files))
           (result (org-agent-fidelity-compare files))
           (mismatches (cdr result)))
      (message "fidelity: %d files, %d headlines, %d mismatches"
               (length files) (car result) (length mismatches))
      (dolist (m (seq-take mismatches 40))
        (message "  %s:%s %S ours=%S org-element=%S"
                 (file-relative-name (nth 0 m) org-agent-test-corpus)
                 (nth 1 m) (nth 2 m) (nth 3 m) (nth 4 m)))
      (should (> (car result) 10000))
      (should (null mismatches)))))

(provide 'org-agent-fidelity-test)
;;; org-agent-fidelity-test.el ends here
