;;; org-agent-fidelity-test.el --- The store against org-element, over the corpus -*- lexical-binding: t; -*-

;;; Commentary:

;; For every headline of every file in the shared corpus (when it is
;; beside the checkout), of this checkout's own Org files, and of a
;; fixture holding one headline per rule the Org release series read
;; differently, the store must report the same title, TODO keyword and
;; its type, priority, own tags, properties and planning as
;; `org-element' of the Org this Emacs has loaded, the same inherited
;; tags as `org-get-tags', and for each file the same tags as
;; `org-file-tags'.  `scripts/test' runs it under Emacs's own
;; Org and under Org 9.6, 9.7 and 9.8 (../shared/org/build), setting
;; ORG_AGENT_TEST_ORG_VERSION to the version it put first on
;; `load-path', which the tests check was loaded.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-element)

(defun org-agent-fidelity--element-properties (hl)
  "Return the property drawer entries of headline HL as a sorted alist.
From Org 9.6 repeated KEY+ lines are one entry whose value is the list
of their values; the store keeps them as one entry per line, so a list
counts as that many entries."
  (let ((plist (cadr hl)) out)
    (while plist
      (let ((key (symbol-name (car plist))) (value (cadr plist)))
        (when (and (string-prefix-p ":" key)
                   (string= key (upcase key))
                   (or (stringp value) (and (consp value) (cl-every #'stringp value))))
          (dolist (v (if (stringp value) (list value) value))
            (push (cons (substring key 1) v) out))))
      (setq plist (cddr plist)))
    (sort out (lambda (a b) (or (string< (car a) (car b))
                                (and (string= (car a) (car b)) (string< (cdr a) (cdr b))))))))

(defun org-agent-fidelity--ts (hl key)
  "Return the raw value of planning timestamp KEY of headline HL."
  (let ((ts (org-element-property key hl)))
    (and ts (org-element-property :raw-value ts))))

(defun org-agent-fidelity--inherited (headlines)
  "Add to each of HEADLINES the tags `org-get-tags' says it inherits.
Its list ends with the distinct own tags; what comes before is
inherited.  (Not the tags it marks `inherited': an empty tag has no
room for the mark.)  The store reads an ancestor's tags as org-element
does; where `org-get-tags' reads a headline's own tags otherwise (Org
9.5 reads them with `org-tag-line-re', without empty tags), the tags
below it are `org-disagrees' rather than compared."
  (let ((org-trust-scanner-tags nil) open)
    ;; Every headline's own tags before any inherited ones: `org-get-tags'
    ;; of Org 9.6 reverses in place the cached tags of the headline it asks.
    (dolist (hl (mapcar (lambda (hl)
                          (goto-char (plist-get hl :begin))
                          (cons hl (org-get-tags nil t)))
                        headlines))
      (let* ((local (cdr hl)) (hl (car hl)) (begin (plist-get hl :begin)))
        (while (and open (>= begin (caar open))) (pop open))
        (push (cons (plist-get hl :end)
                    (or (cdar open)
                        (not (equal (mapcar #'substring-no-properties local)
                                    (plist-get hl :tags)))))
              open)
        (goto-char begin)
        (nconc hl (list :inherited-tags
                        (if (cdar open) 'org-disagrees
                          (mapcar #'substring-no-properties
                                  (butlast (org-get-tags)
                                           (length (delete-dups local)))))))))))

(defun org-agent-fidelity--oracle (file)
  "Return what Org reports for FILE: (FILE-TAGS . HEADLINES).
FILE-TAGS is `org-file-tags'; HEADLINES what org-element reports for
each headline, in order, and the tags it inherits."
  (with-temp-buffer
    (let ((enable-local-variables nil)
          (default-directory (file-name-directory file))
          ;; "#+STARTUP: align" realigns tables when Org starts, which moves text
          ;; in the buffer; the file on disk is what we compare with.
          (org-startup-options (cl-remove "align" org-startup-options
                                          :key #'car :test #'equal)))
      (insert-file-contents file)
      (delay-mode-hooks (org-mode))
      (let ((headlines
             (org-element-map (org-element-parse-buffer 'headline) 'headline
               (lambda (hl)
                 (list :begin (org-element-property :begin hl)
                       :end (org-element-property :end hl)
                       :title (org-element-property :raw-value hl)
                       :todo (org-element-property :todo-keyword hl)
                       :todo-type (org-element-property :todo-type hl)
                       :priority (org-element-property :priority hl)
                       :tags (mapcar #'substring-no-properties
                                     (org-element-property :tags hl))
                       :properties (org-agent-fidelity--element-properties hl)
                       :scheduled (org-agent-fidelity--ts hl :scheduled)
                       :deadline (org-agent-fidelity--ts hl :deadline)
                       :closed (org-agent-fidelity--ts hl :closed))))))
        (org-agent-fidelity--inherited headlines)
        (cons (mapcar #'substring-no-properties org-file-tags) headlines)))))

(defun org-agent-fidelity--ours (file)
  "Return what the store reports for FILE: (FILE-TAGS . HEADLINES)."
  (org-agent-ingest-file file t)
  (let ((nodes (org-agent-query :file file)))
    (cons (plist-get (seq-find (lambda (n) (eq (plist-get n :kind) 'file)) nodes) :tags)
          (mapcar #'org-agent-fidelity--our-headline
                  (seq-filter (lambda (n) (eq (plist-get n :kind) 'headline)) nodes)))))

(defun org-agent-fidelity--our-headline (n)
  "Return the fields compared of the store's node plist N."
  (list :begin (plist-get n :begin)
        :title (plist-get n :title)
        :todo (plist-get n :todo)
        :todo-type (plist-get n :todo-type)
        :priority (plist-get n :priority)
        :tags (plist-get n :tags)
        :inherited-tags (plist-get n :inherited-tags)
        :properties (sort (copy-sequence (plist-get n :properties))
                          (lambda (a b) (or (string< (car a) (car b))
                                            (and (string= (car a) (car b))
                                                 (string< (cdr a) (cdr b))))))
        :scheduled (plist-get n :scheduled)
        :deadline (plist-get n :deadline)
        :closed (plist-get n :closed)))

(defconst org-agent-fidelity--fields
  '(:begin :title :todo :todo-type :priority :tags :inherited-tags :properties
           :scheduled :deadline :closed)
  "The fields compared, in the order mismatches are reported.")

(defun org-agent-fidelity-compare (files)
  "Compare store and org-element over FILES.
Return (HEADLINES . MISMATCHES), each mismatch (FILE BEGIN FIELD OURS THEIRS)."
  (let ((headlines 0) mismatches)
    (dolist (file files)
      (let* ((org (org-agent-fidelity--oracle file))
             (store (org-agent-fidelity--ours file))
             (theirs (cdr org))
             (ours (cdr store)))
        (unless (equal (car store) (car org))
          (push (list file 1 :file-tags (car store) (car org)) mismatches))
        (setq headlines (+ headlines (length theirs)))
        (unless (= (length theirs) (length ours))
          (push (list file 0 :count (length ours) (length theirs)) mismatches))
        (cl-loop for a in ours for b in theirs
                 do (dolist (field org-agent-fidelity--fields)
                      (unless (or (equal (plist-get a field) (plist-get b field))
                                  (eq (plist-get b field) 'org-disagrees))
                        (push (list file (plist-get b :begin) field
                                    (plist-get a field) (plist-get b field))
                              mismatches))))))
    (cons headlines (nreverse mismatches))))

(defun org-agent-fidelity--report (what root files result)
  "Print RESULT of comparing FILES under ROOT, named WHAT; return the mismatches."
  (let ((mismatches (cdr result)))
    (message "fidelity: Org %s, %s: %d files, %d headlines, %d mismatches"
             (org-version) what (length files) (car result) (length mismatches))
    (dolist (m (seq-take mismatches 40))
      (message "  %s:%s %S ours=%S org-element=%S"
               (file-relative-name (nth 0 m) root)
               (nth 1 m) (nth 2 m) (nth 3 m) (nth 4 m)))
    mismatches))

(ert-deftest org-agent-fidelity-the-org-asked-is-loaded ()
  "The Org the test command put first on `load-path' is the one asked."
  (let ((wanted (getenv "ORG_AGENT_TEST_ORG_VERSION")))
    (if (not wanted)
        (should (string-prefix-p "9." (org-version)))
      (should (equal (org-version) wanted))
      ;; Loaded from there, not from Emacs's own lisp/org/.
      (should (string-prefix-p (file-name-as-directory (getenv "ORG_AGENT_TEST_ORG_DIR"))
                               (locate-library "org-element"))))))

(ert-deftest org-agent-fidelity-corpus ()
  "Every headline of the shared corpus reads as org-element reads it."
  (org-agent-test-require-corpus)
  (org-agent-test-with-store
    (let* ((files (org-agent-test-corpus-files))
           (result (org-agent-fidelity-compare files)))
      (should (> (car result) 10000))
      (should (null (org-agent-fidelity--report "corpus" org-agent-test-corpus files result))))))

(ert-deftest org-agent-fidelity-checkout ()
  "Every headline of this checkout's own Org files reads as org-element reads it.
Every clone has them, the shared corpus or not."
  (org-agent-test-with-store
    (let* ((files (org-agent-test-checkout-org-files))
           (result (org-agent-fidelity-compare files)))
      (should (> (length files) 10))
      (should (> (car result) 100))
      (should (null (org-agent-fidelity--report "checkout" org-agent-test-root files result))))))

(defconst org-agent-fidelity--versions-fixture
  (expand-file-name "../fixtures/org-versions/"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Headlines written to tell the Org release series apart.")

(ert-deftest org-agent-fidelity-version-differences ()
  "The headlines each Org series reads its own way read as this Org reads them."
  (org-agent-test-with-store
    (let* ((files (directory-files org-agent-fidelity--versions-fixture t "\\.org\\'"))
           (result (org-agent-fidelity-compare files)))
      (should (> (car result) 25))
      (should (null (org-agent-fidelity--report
                     "version fixture" org-agent-fidelity--versions-fixture files result))))))

(ert-deftest org-agent-fidelity-inline-tasks ()
  "With org-inlinetask loaded, its inline tasks are not headlines in the store either.
Loading it changes how this Emacs's Org reads every file, so a child Emacs does it."
  (let* ((fixture (expand-file-name "inlinetasks.org" org-agent-fidelity--versions-fixture))
         (without (org-agent-test-with-store
                    (car (org-agent-fidelity-compare (list fixture)))))
         (child (with-temp-buffer
                  (apply #'call-process (expand-file-name invocation-name invocation-directory)
                         nil t nil "-Q" "--batch"
                         (append
                          (mapcan (lambda (dir) (list "-L" dir)) load-path)
                          (list "-l" "org-agent-fidelity-test"
                                "--eval"
                                (format "%S"
                                        `(progn
                                           (require 'org-inlinetask)
                                           (org-agent-test-with-store
                                             (princ (format "ORG-AGENT-INLINE %S\n"
                                                            (org-agent-fidelity-compare
                                                             (list ,fixture))))))))))
                  (goto-char (point-min))
                  (and (re-search-forward "^ORG-AGENT-INLINE \\(.*\\)$" nil t)
                       (car (read-from-string (match-string 1))))))
         (with (car child)))
    (message "fidelity: Org %s, inline tasks: %S headlines without org-inlinetask, %S with; mismatches %S"
             (org-version) without with (cdr child))
    (should (equal without 7))
    ;; The inline tasks (and the END line of one) are text of the headline they sit in.
    (should (equal with 3))
    (should (null (cdr child)))))

(provide 'org-agent-fidelity-test)
;;; org-agent-fidelity-test.el ends here
