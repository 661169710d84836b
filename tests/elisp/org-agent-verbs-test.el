;;; org-agent-verbs-test.el --- Refile, archive, IDs, links, notes, new files -*- lexical-binding: t; -*-

;;; Commentary:

;; The verbs the skills need, each on real Org files inside a bound
;; `org-agent-directories', through Org's own functions, each one undo
;; step (per buffer it changes), each previewed without changing
;; anything.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-actuator)
(require 'org-agent-test-notes)

(defconst org-agent-verbs-test-tasks
  "#+TODO: TODO | DONE\n* Inbox\n** TODO Call Ana\n:PROPERTIES:\n:ID:       ana\n:END:\nAbout the site.\n*** Her number\n* Projects\n:PROPERTIES:\n:ID:       projects\n:END:\n** Garden\nNo id here.\n"
  "The file most verb tests edit.")

(defun org-agent-verbs-test-unchanged-by-preview (action files)
  "Preview ACTION; return its diff, checking that FILES did not change."
  (let* ((before (mapcar #'org-agent-test-file-text files))
         (preview (org-agent-actuator-preview (append '(:type :request :target :emacs) action))))
    (should-not (plist-get preview :error))
    (should (equal (mapcar #'org-agent-test-file-text files) before))
    (plist-get preview :diff)))

(ert-deftest org-agent-verbs-refile-keeps-the-id-and-moves-the-subtree ()
  "Refile moves a subtree under another node with `org-refile', ID and child with it."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let ((file (funcall path "tasks.org")))
      (let ((diff (org-agent-verbs-test-unchanged-by-preview
                   '(:action :refile :id "ana" :target-id "projects") (list file))))
        (should (string-match-p "^-\\*\\* TODO Call Ana" diff))
        (should (string-match-p "under \"Projects\"" diff))
        (should (string-match-p "^\\+\\*\\*\\* Her number" diff)))
      (org-agent-test-act :action :refile :id "ana" :target-id "projects")
      (let ((text (org-agent-test-file-text file)))
        (should (string-match-p
                 "\\* Projects\n\\(?:.*\n\\)*\\*\\* TODO Call Ana\n:PROPERTIES:\n:ID: +ana\n:END:\nAbout the site.\n\\*\\*\\* Her number"
                 text))
        (should (string-match-p "\\`#\\+TODO: TODO | DONE\n\\* Inbox\n\\* Projects" text)))
      ;; The store sees the move once the saved file is ingested.
      (should (org-agent-test-wait
               (lambda () (equal (org-agent-outline-path "ana") '("Projects")))))
      ;; One undo step brings it back.
      (org-agent-test-undo-in file)
      (should (equal (with-current-buffer (get-file-buffer file) (buffer-string))
                     org-agent-verbs-test-tasks)))))

(ert-deftest org-agent-verbs-refile-to-another-file ()
  "Refile to a file puts the subtree at its top level; both files change."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks)
                                   ("someday.org" . "#+TITLE: Someday\n* Old idea\n"))
    (let ((from (funcall path "tasks.org")) (to (funcall path "someday.org")))
      (let ((diff (org-agent-verbs-test-unchanged-by-preview
                   `(:action :refile :id "ana" :target-file ,to) (list from to))))
        (should (string-match-p "^\\+\\* TODO Call Ana" diff))
        (should (string-match-p "^\\+\\*\\* Her number" diff)))
      (org-agent-test-act :action :refile :id "ana" :target-file to)
      (should-not (string-match-p "Call Ana" (org-agent-test-file-text from)))
      (should (string-match-p "^\\* Old idea\n\\* TODO Call Ana\n:PROPERTIES:\n:ID: +ana\n"
                              (org-agent-test-file-text to)))
      (should (org-agent-test-wait
               (lambda () (equal (plist-get (org-agent-node "ana") :file) to))))
      ;; One undo step in each buffer brings both back.
      (org-agent-test-undo-in to)
      (org-agent-test-undo-in from)
      (should (equal (with-current-buffer (get-file-buffer from) (buffer-string))
                     org-agent-verbs-test-tasks))
      (should (equal (with-current-buffer (get-file-buffer to) (buffer-string))
                     "#+TITLE: Someday\n* Old idea\n"))
      (should (string-match-p "not an existing Org file"
                              (org-agent-test-act-refused
                               :action :refile :id "ana" :target-file (funcall path "none.org"))))
      (should (string-match-p "exactly one"
                              (org-agent-test-act-refused :action :refile :id "ana"))))))

(ert-deftest org-agent-verbs-archive-goes-where-org-archive-location-says ()
  "Archive moves the subtree to the file and heading of `org-archive-location'."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let* ((file (funcall path "tasks.org"))
           (archive (funcall path "archive/tasks.org"))
           (org-archive-location (concat dir "archive/%s::* Old tasks")))
      (make-directory (file-name-directory archive))
      (let ((diff (org-agent-verbs-test-unchanged-by-preview
                   '(:action :archive :id "ana") (list file))))
        (should (string-match-p (regexp-quote archive) diff))
        (should (string-match-p "^\\+\\*\\* TODO Call Ana" diff))
        (should-not (file-exists-p archive)))
      (org-agent-test-act :action :archive :id "ana")
      (should-not (string-match-p "Call Ana" (org-agent-test-file-text file)))
      (let ((text (org-agent-test-file-text archive)))
        ;; Org's archive file: a header line, then the heading, blank lines as Org puts them.
        (should (string-match-p "^\\* Old tasks\n+\\*\\* TODO Call Ana" text))
        (should (string-match-p ":ARCHIVE_FILE: +.*tasks.org" text))
        (should (string-match-p ":ID: +ana" text)))
      (org-agent-test-undo-in file)
      (should (string-match-p "Call Ana" (with-current-buffer (get-file-buffer file)
                                           (buffer-string)))))))

(ert-deftest org-agent-verbs-ensure-id-adds-an-id-once ()
  "Ensure-id gives a node without an :ID: one, once; the node keeps it."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let* ((file (funcall path "tasks.org"))
           (garden (org-agent-test-id-of "Garden")))
      (should (string-prefix-p "oa-" garden))
      (should (string-match-p "^\\+:ID: "
                              (org-agent-verbs-test-unchanged-by-preview
                               `(:action :ensure-id :id ,garden) (list file))))
      (let* ((made (plist-get (org-agent-test-act :action :ensure-id :id garden) :org-id))
             (text (org-agent-test-file-text file)))
        (should (string-match-p (format "\\*\\* Garden\n:PROPERTIES:\n:ID: +%s\n:END:\nNo id here."
                                        (regexp-quote made))
                                text))
        ;; The edited buffer is ingested again on a worker: the new id is known once it is.
        (should (org-agent-test-wait (lambda () (org-agent-node made)) 30))
        (should (equal (plist-get (org-agent-test-act :action :ensure-id :id made) :org-id)
                       made))
        (should (equal (org-agent-test-file-text file) text))
        (should (equal (plist-get (org-agent-test-act :action :ensure-id :id "ana") :org-id)
                       "ana"))
        (should (equal (org-agent-test-file-text file) text))))))

(ert-deftest org-agent-verbs-create-note-writes-a-new-file-only ()
  "Create-note writes #+TITLE/#+FILETAGS and a body, never over a file or outside."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let ((new (funcall path "ideas/garden.org")))
      (should (string-match-p "^\\+#\\+TITLE: Garden plans"
                              (plist-get (org-agent-actuator-preview
                                          '(:type :request :target :emacs :action :create-note
                                                  :file "ideas/garden.org" :title "Garden plans"))
                                         :diff)))
      (should-not (file-exists-p new))
      (org-agent-test-act :action :create-note :file "ideas/garden.org"
                               :title "Garden plans" :filetags '("garden" "idea")
                               :body "Tomatoes by the wall.")
      (should (equal (org-agent-test-file-text new)
                     "#+TITLE: Garden plans\n#+FILETAGS: :garden:idea:\n\nTomatoes by the wall.\n"))
      ;; Ingested: the store has its file node.
      (should (org-agent-query :file new))
      (should (string-match-p "exists"
                              (org-agent-test-act-refused :action :create-note
                                                            :file "tasks.org" :title "X")))
      (should (equal (org-agent-test-file-text (funcall path "tasks.org"))
                     org-agent-verbs-test-tasks))
      (let ((outside (make-temp-file "org-agent-outside" nil ".org")))
        (delete-file outside)
        (should (string-match-p "outside org-agent-directories"
                                (org-agent-test-act-refused :action :create-note
                                                              :file outside :title "X")))
        (should (string-match-p "outside org-agent-directories"
                                (org-agent-test-act-refused :action :create-note
                                                              :file "../escape.org" :title "X")))
        (should-not (file-exists-p outside)))
      (should (string-match-p "not an .org file"
                              (org-agent-test-act-refused :action :create-note
                                                            :file "notes.txt" :title "X")))
      (should (plist-get (org-agent-actuator-preview
                          '(:type :request :target :emacs :action :create-note
                                  :file "tasks.org" :title "X"))
                         :error)))))

(ert-deftest org-agent-verbs-insert-link-at-the-body-end ()
  "Insert-link writes [[id:…][…]] at the end of the body, giving the target an ID."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let ((file (funcall path "tasks.org"))
          (garden (org-agent-test-id-of "Garden")))
      (should (string-match-p "^\\+\\[\\[id:projects\\]\\[Projects\\]\\]"
                              (org-agent-verbs-test-unchanged-by-preview
                               '(:action :insert-link :id "ana" :target-id "projects")
                               (list file))))
      (org-agent-test-act :action :insert-link :id "ana" :target-id "projects")
      (should (string-match-p "About the site.\n\\[\\[id:projects\\]\\[Projects\\]\\]\n\\*\\*\\* Her number"
                              (org-agent-test-file-text file)))
      (org-agent-test-undo-in file)
      (should (equal (with-current-buffer (get-file-buffer file) (buffer-string))
                     org-agent-verbs-test-tasks))
      ;; A target without an ID gets one, in the same undo step.
      (let* ((link (plist-get (org-agent-test-act :action :insert-link :id "ana"
                                                        :target-id garden :description "the garden")
                              :link))
             (made (progn (string-match "\\[\\[id:\\([^]]+\\)\\]" link) (match-string 1 link)))
             ;; The buffer, not the disk: after the undo above it has changes of its
             ;; own, so the agent left it unsaved.
             (text (with-current-buffer (get-file-buffer file) (buffer-string))))
        (should (string-match-p (format "\\[\\[id:%s\\]\\[the garden\\]\\]" (regexp-quote made)) text))
        (should (string-match-p (format "\\*\\* Garden\n:PROPERTIES:\n:ID: +%s" (regexp-quote made))
                                text))
        (org-agent-test-undo-in file)
        (should (equal (with-current-buffer (get-file-buffer file) (buffer-string))
                       org-agent-verbs-test-tasks))))))

(ert-deftest org-agent-verbs-add-note-into-the-logbook ()
  "Add-note writes Org's note format, into LOGBOOK when `org-log-into-drawer' is t."
  (org-agent-test-with-notes-dir `(("tasks.org" . ,org-agent-verbs-test-tasks))
    (let ((file (funcall path "tasks.org"))
          (org-log-into-drawer t))
      (should (string-match-p "Note taken on"
                              (org-agent-verbs-test-unchanged-by-preview
                               '(:action :add-note :id "ana" :text "Called her.") (list file))))
      (org-agent-test-act :action :add-note :id "ana" :text "Called her.\nShe calls back.")
      (should (string-match-p
               (concat ":ID: +ana\n:END:\n:LOGBOOK:\n"
                       "- Note taken on \\[[0-9]\\{4\\}-[0-9]\\{2\\}-[0-9]\\{2\\} [^]\n]+\\] \\\\\\\\\n"
                       "  Called her.\n  She calls back.\n:END:\nAbout the site.")
               (org-agent-test-file-text file)))
      (org-agent-test-undo-in file)
      (should (equal (with-current-buffer (get-file-buffer file) (buffer-string))
                     org-agent-verbs-test-tasks))
      (should (string-match-p "empty" (org-agent-test-act-refused :action :add-note
                                                                     :id "ana" :text "  "))))))

(provide 'org-agent-verbs-test)
;;; org-agent-verbs-test.el ends here
