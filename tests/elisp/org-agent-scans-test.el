;;; org-agent-scans-test.el --- The scans' buffers and the ids option -*- lexical-binding: t; -*-

;;; Commentary:

;; `org-agent-scan' and `org-agent-daily-briefing' on real files
;; ingested by the module: what the buffer shows, where RET goes; and
;; `org-agent-ensure-ids': an edited note gains an :ID: in the edit's
;; own undo step.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-test-notes)
(require 'org-agent-scans)

(defconst org-agent-scans-test-ids
  '(("plan.org" . "* Plan\n:PROPERTIES:\n:ID:       same\n:END:\nSee [[id:gone][the old plan]].\n")
    ("copy.org" . "* Notes\n** Plan, copied\n:PROPERTIES:\n:ID:       same\n:END:\n"))
  "Two files sharing an id, one with a link to an id nobody has.")

(ert-deftest org-agent-scans-ids-are-listed-by-kind-and-visited ()
  (org-agent-test-with-notes-dir org-agent-scans-test-ids
    (let* ((findings (org-agent--scan "ids" nil nil))
           (copy (car findings)))
      (should (equal (mapcar (lambda (f) (plist-get f :kind)) findings)
                     '("duplicate-id" "dangling-id-link")))
      ;; Either file may hold the id first: the other is the copy, addressed as same#2.
      (should (member (plist-get copy :title) '("Plan" "Plan, copied")))
      (should (string-match-p "same#2" (plist-get copy :detail)))
      (let ((buffer (org-agent-scans--show "ids" nil)))
      (unwind-protect
          (with-current-buffer buffer
            (should (derived-mode-p 'org-agent-scan-mode))
            (let ((case-fold-search nil))
              (should (string-match-p "^Duplicate id (1)$" (buffer-string)))
              (should (string-match-p "^Dangling id link (1)$" (buffer-string))))
            (goto-char (point-min))
            (search-forward "Duplicate id (1)\n")
            (org-agent-scan-visit)
            (should (equal (buffer-file-name) (plist-get copy :file)))
            (should (equal (org-get-heading t t t t) (plist-get copy :title))))
          (kill-buffer buffer))))))

(ert-deftest org-agent-scans-without-an-inbox-says-what-to-set ()
  "The inbox scan with no inbox says what the user can do, not what a model should."
  (org-agent-test-with-notes-dir '(("work.org" . "* Captured\n** Call the bank\n"))
    (let* ((org-agent-inbox nil)
           (org-default-notes-file (expand-file-name "nowhere.org" dir))
           (err (should-error (org-agent-scan "inbox") :type 'user-error)))
      (should (string-match-p "set .org-agent-inbox." (cadr err)))
      (should-not (string-match-p "ask the user" (cadr err))))
    ;; Named by the option, the headline is the inbox.
    (let ((org-agent-inbox (concat (funcall path "work.org") "::Captured")))
      (should (equal (mapcar (lambda (f) (plist-get f :title)) (org-agent-scans--run "inbox" nil))
                     '("Call the bank"))))))

(ert-deftest org-agent-scans-the-demo-notes-have-an-inbox ()
  "The demo notes have an inbox, so /inbox and the inbox scan can be tried on them."
  (org-agent-test-with-notes-dir
      (mapcar (lambda (f) (cons (file-name-nondirectory f)
                                (with-temp-buffer (insert-file-contents f) (buffer-string))))
              (directory-files (expand-file-name "demo/notes" org-agent-test-root) t "\\.org\\'"))
    (let ((items (seq-filter (lambda (f) (equal (plist-get f :kind) "inbox-item"))
                             (org-agent-scans--run "inbox" nil))))
      (should (member "Buy batteries for the smoke detector"
                      (mapcar (lambda (f) (plist-get f :title)) items))))))

(ert-deftest org-agent-scans-an-unknown-scan-is-an-error-naming-the-scans ()
  (org-agent-test-with-store
    (let ((err (should-error (org-agent--scan "everything" nil nil) :type 'org-agent-error)))
      (should (string-match-p "the scans are ids, gtd-integrity" (cadr err))))))

(ert-deftest org-agent-scans-an-edited-note-gains-an-id-in-the-same-undo-step ()
  (org-agent-test-with-notes-dir
      '(("tasks.org" . "#+TODO: TODO | DONE\n* TODO Water the plants\n"))
    (let* ((file (funcall path "tasks.org"))
           (id (org-agent-test-id-of "Water the plants"))
           (org-agent-ensure-ids t))
      (org-agent-test-act :action :set-todo :id id :state "DONE")
      (let ((text (org-agent-test-file-text file)))
        (should (string-match-p "^\\* DONE Water the plants" text))
        (should (string-match-p "^:ID: +[0-9a-f-]\\{36\\}$" text)))
      (org-agent-test-undo-in file)
      (with-current-buffer (get-file-buffer file)
        (should (equal (buffer-string) "#+TODO: TODO | DONE\n* TODO Water the plants\n"))))))

(ert-deftest org-agent-scans-without-the-option-an-edit-adds-no-id ()
  (org-agent-test-with-notes-dir
      '(("tasks.org" . "#+TODO: TODO | DONE\n* TODO Water the plants\n"))
    (let ((id (org-agent-test-id-of "Water the plants")))
      (org-agent-test-act :action :set-todo :id id :state "DONE")
      (should-not (string-match-p ":ID:" (org-agent-test-file-text (funcall path "tasks.org")))))))

(ert-deftest org-agent-scans-the-daily-briefing-shows-today-in-the-order-of-a-day ()
  (let* ((today (format-time-string "%Y-%m-%d %a"))
         (yesterday (format-time-string "%Y-%m-%d %a" (time-subtract nil (* 24 3600))))
         (notes (format "#+TODO: TODO WAITING | DONE\n* TODO Call the bank\nSCHEDULED: <%s>\n* TODO Pay the rent\nDEADLINE: <2020-01-01 Wed>\n* DONE Post the letter\nCLOSED: [%s 18:00]\n* TODO Next year's plan\nSCHEDULED: <2099-01-01 Thu>\n"
                        today yesterday)))
    (org-agent-test-with-notes-dir `(("day.org" . ,notes))
      (let ((buffer (org-agent-scans--show "daily-briefing" nil)))
        (unwind-protect
            (with-current-buffer buffer
              (let ((text (buffer-string))
                    (case-fold-search nil))
                (should (string-match-p "^Scheduled today (1)\n  TODO Call the bank" text))
                (should (string-match-p "^Overdue (1)\n  TODO Pay the rent" text))
                (should (string-match-p "^Closed yesterday (1)\n  DONE Post the letter" text))
                (should-not (string-match-p "Next year's plan" text))
                ;; Today's items come first, as the briefing reads.
                (should (< (string-match "Scheduled today" text) (string-match "Overdue" text)))))
          (kill-buffer buffer))))))

;; The scans are the module's: `org-agent-scan' offers the list the module gives, with no copy.
(ert-deftest org-agent-scans-the-names-are-the-modules ()
  "`org-agent--scan-names' lists the scans the module runs, as its error names them."
  (org-agent-test-with-store
    (let ((err (should-error (org-agent--scan "everything" nil nil) :type 'org-agent-error)))
      (should (string-match "the scans are \\(.*\\)\\'" (cadr err)))
      (should (equal (org-agent--scan-names) (split-string (match-string 1 (cadr err)) ", ")))
      (should (member "daily-briefing" (org-agent--scan-names))))))

(provide 'org-agent-scans-test)
;;; org-agent-scans-test.el ends here
