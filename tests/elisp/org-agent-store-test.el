;;; org-agent-store-test.el --- ERT tests of the store API in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; The module loaded in this Emacs, used through the public API: ingest,
;; queries, history, snapshots, the save hook, directory ingest,
;; persistence across two Emacs processes, and corrupt stores.

;;; Code:

(require 'org-agent-test-setup)

(defconst org-agent-test-demo
  (expand-file-name "demo/notes/" org-agent-test-root)
  "The demo notes shipped with the package.")

(defmacro org-agent-test-with-notes (&rest body)
  "Run BODY with a fresh store and a temporary copy of the demo notes.
The copy's directory is bound to `notes'."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-store
     (let ((notes (file-name-as-directory (make-temp-file "org-agent-notes" t))))
       (unwind-protect
           (progn
             (dolist (f (directory-files org-agent-test-demo t "\\.org\\'"))
               (copy-file f notes))
             ,@body)
         (org-agent-test-kill-file-buffers notes)
         (delete-directory notes t)))))

(defun org-agent-test-titles (nodes)
  "Return the titles of NODES."
  (mapcar (lambda (n) (plist-get n :title)) nodes))

(defun org-agent-test-node-titled (title &optional file)
  "Return the headline node titled TITLE (in FILE if given)."
  (seq-find (lambda (n) (equal (plist-get n :title) title))
            (apply #'org-agent-query :type 'headline (and file (list :file file)))))

(ert-deftest org-agent-module-version-matches ()
  "The loaded module reports the package's version."
  (should (equal (org-agent--version) org-agent-version)))

(ert-deftest org-agent-ingest-file-and-node-fields ()
  "A file ingests into nodes with every field the API promises."
  (org-agent-test-with-notes
    (let* ((file (expand-file-name "projects.org" notes))
           (count (org-agent-ingest-file file)))
      ;; The file node and its eight headlines.
      (should (= count 9))
      (let ((site (org-agent-node "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a01")))
        (should (equal (plist-get site :title) "Launch the field-notes website"))
        (should (equal (plist-get site :todo) "TODO"))
        (should (eq (plist-get site :todo-type) 'todo))
        (should (equal (plist-get site :tags) '("project")))
        (should (equal (plist-get site :inherited-tags) '("work")))
        (should (equal (assoc "EFFORT" (plist-get site :properties)) '("EFFORT" . "3d")))
        (should (= (plist-get site :level) 1))
        (should (equal (plist-get site :file) file))
        (should (string-match-p "survey team" (plist-get site :body)))
        (should (= (length (plist-get site :children)) 3))
        (should (= 64 (length (plist-get site :hash))))
        ;; :begin is the buffer position of the headline.
        (with-temp-buffer
          (insert-file-contents file)
          (goto-char (plist-get site :begin))
          (should (looking-at-p "\\* TODO Launch the field-notes website"))))
      (let ((pipeline (org-agent-node "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a02")))
        ;; NEXT comes from the file's own #+TODO line.
        (should (equal (plist-get pipeline :todo) "NEXT"))
        (should (eq (plist-get pipeline :todo-type) 'todo))
        (should (equal (plist-get pipeline :scheduled) "<2026-11-24 Tue>"))
        (should (equal (plist-get pipeline :inherited-tags) '("work" "project")))
        (should (equal (plist-get pipeline :parent) "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a01"))
        (should (equal (org-agent-outline-path (plist-get pipeline :id))
                       '("Launch the field-notes website"))))
      (let ((transfer (org-agent-test-node-titled "Domain name transfer" file)))
        (should (equal (plist-get transfer :todo) "WAITING"))
        (should (equal (plist-get transfer :deadline) "<2026-12-01 Tue -3d>")))
      (let ((figures (org-agent-test-node-titled "Collect the figures from each team" file)))
        (should (eq (plist-get figures :priority) ?A))))))

(ert-deftest org-agent-query-shares-a-node-s-id-with-its-children ()
  "In one result, a node's `:id' string is its children's `:parent'.
Siblings share it too: a subtree listed makes one id string per
parent, not one per child, which is that much less garbage."
  (org-agent-test-with-notes
    (let ((file (expand-file-name "projects.org" notes)))
      (org-agent-ingest-file file)
      (let* ((nodes (org-agent-query :tag "project" :file file))
             (site (seq-find (lambda (n) (equal (plist-get n :id)
                                                "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a01"))
                             nodes))
             (children (seq-filter (lambda (n) (equal (plist-get n :parent) (plist-get site :id)))
                                   nodes)))
        (should site)
        (should (= (length children) 3))
        (dolist (child children)
          (should (eq (plist-get child :parent) (plist-get site :id))))
        ;; Without the parent in the result, its children still share one string.
        (let ((kids (seq-filter (lambda (n) (equal (plist-get n :parent) (plist-get site :id)))
                                (org-agent-query :tag "project" :file file :level 2))))
          (should (= (length kids) 3))
          (should (eq (plist-get (car kids) :parent) (plist-get (cadr kids) :parent)))
          (should (eq (plist-get (cadr kids) :parent) (plist-get (nth 2 kids) :parent))))))))

;; Fails without the sharing: each node made its own copy of the same text.
(ert-deftest org-agent-query-shares-equal-timestamps-and-property-values ()
  "In one result, equal timestamps and property values are one string.
Tasks scheduled on the same day, or with the same effort, are common;
each copy was garbage for Emacs to collect.  The values read as before."
  (org-agent-test-with-notes
    (let ((file (expand-file-name "same-day.org" notes)))
      (with-temp-file file
        (insert "* TODO One\nSCHEDULED: <2026-12-01 Tue>\n:PROPERTIES:\n:EFFORT:   1:00\n:END:\n"
                "* TODO Two\nSCHEDULED: <2026-12-01 Tue> DEADLINE: <2026-12-01 Tue>\n"
                ":PROPERTIES:\n:EFFORT:   1:00\n:END:\n"))
      (org-agent-ingest-file file)
      (let* ((nodes (org-agent-query :file file :type 'headline))
             (one (car nodes))
             (two (cadr nodes)))
        (should (equal (mapcar (lambda (n) (plist-get n :title)) nodes) '("One" "Two")))
        (should (equal (plist-get one :scheduled) "<2026-12-01 Tue>"))
        (should (eq (plist-get one :scheduled) (plist-get two :scheduled)))
        (should (eq (plist-get two :scheduled) (plist-get two :deadline)))
        (should (equal (cdr (assoc "EFFORT" (plist-get one :properties))) "1:00"))
        (should (eq (cdr (assoc "EFFORT" (plist-get one :properties)))
                    (cdr (assoc "EFFORT" (plist-get two :properties)))))
        ;; Another call makes its own strings: nothing is shared between results.
        (should-not (eq (plist-get one :scheduled)
                        (plist-get (car (org-agent-query :file file :type 'headline))
                                   :scheduled)))))))

(ert-deftest org-agent-queries ()
  "`org-agent-query' answers tag, TODO, property, planning and project queries."
  (org-agent-test-with-notes
    (dolist (f (directory-files notes t "\\.org\\'")) (org-agent-ingest-file f))
    (let ((tasks (expand-file-name "tasks.org" notes)))
      (should (equal (org-agent-test-titles (org-agent-query :tag "home"))
                     '("Call the plumber about the leak")))
      ;; Inherited from a parent headline and from #+FILETAGS.
      (should (member "Renew the library card"
                      (org-agent-test-titles (org-agent-query :tag "personal"))))
      (should (= (org-agent-count :tag "work" :type 'headline) 8))
      ;; #+FILETAGS are the file node's own tags, inherited by its headlines.
      (should (null (org-agent-query :own-tag "work" :type 'headline)))
      (should (equal (org-agent-test-titles (org-agent-query :own-tag "work")) '("Projects")))
      (should (equal (org-agent-test-titles (org-agent-query :todo "WAITING"))
                     '("Domain name transfer")))
      (should (equal (sort (org-agent-test-titles (org-agent-query :todo-type 'done :file tasks)) #'string<)
                     '("Buy a new kettle" "Read \"Getting Things Done\"")))
      (should (equal (org-agent-test-titles (org-agent-query :property "PHONE"))
                     '("Call the plumber about the leak")))
      (should (equal (org-agent-test-titles (org-agent-query :property '("PHONE" . "555-0142")))
                     '("Call the plumber about the leak")))
      (should (null (org-agent-query :property '("PHONE" . "nope"))))
      ;; An empty property value is a property all the same.
      (should (equal (org-agent-test-titles (org-agent-query :property "CONTACT"))
                     '("Call the plumber about the leak")))
      (should (equal (org-agent-test-titles (org-agent-query :scheduled-before "2026-11-24"))
                     '("Renew the library card")))
      (should (equal (org-agent-test-titles (org-agent-query :deadline-after "2026-12-02"))
                     '("Quarterly report")))
      (should (equal (org-agent-test-titles (org-agent-query :projects t))
                     '("Launch the field-notes website" "Quarterly report")))
      (should (equal (org-agent-test-titles (org-agent-query :sparse t :tag "home"))
                     '("Tasks" "Errands" "Call the plumber about the leak")))
      (should (= (length (org-agent-query :type 'headline :limit 3)) 3))
      (should (equal (mapcar (lambda (n) (plist-get n :level))
                             (org-agent-query :file (expand-file-name "journal.org" notes)))
                     '(0 1 2 3 3)))
      (should (equal (org-agent-query :todo "WAITING" :fields '(:title :todo))
                     '((:title "Domain name transfer" :todo "WAITING"))))
      (should-error (org-agent-query :fields '(:nonsense)))
      (should-error (org-agent-query :bogus 1))
      (should-error (org-agent-query :scheduled-before "next week")))))

(ert-deftest org-agent-closed-within ()
  "Recently completed tasks are found by their CLOSED date."
  (org-agent-test-with-store
    (let ((file (make-temp-file "org-agent-closed" nil ".org"
                                (format "* DONE Today\nCLOSED: [%s]\n* DONE Long ago\nCLOSED: [2001-01-01 Mon 10:00]\n"
                                        (format-time-string "%F %a %H:%M")))))
      (unwind-protect
          (progn
            (org-agent-ingest-file file)
            (should (equal (org-agent-test-titles (org-agent-query :closed-within 7))
                           '("Today"))))
        (delete-file file)))))

(ert-deftest org-agent-buffer-keywords-and-history ()
  "A buffer ingests with its own keywords; edits make new versions, unchanged text none."
  (org-agent-test-with-store
    (with-temp-buffer
      (insert "#+TODO: NEXT | FINISHED\n* NEXT Alpha\n** FINISHED Beta\n* Gamma\n")
      (org-mode)
      (should (= (org-agent-ingest-buffer) 4))
      (let* ((beta (org-agent-test-node-titled "Beta"))
             (id (plist-get beta :id))
             (versions (plist-get (org-agent-store-stats) :versions)))
        (should (eq (plist-get beta :todo-type) 'done))
        ;; Re-ingesting the same text adds nothing.
        (org-agent-ingest-buffer)
        (should (= versions (plist-get (org-agent-store-stats) :versions)))
        ;; Editing Beta's body: new versions for Beta, Alpha and the file, not Gamma.
        (goto-char (point-max))
        (forward-line -1)
        (insert "Beta's body.\n")
        (org-agent-ingest-buffer)
        (should (= (+ versions 3) (plist-get (org-agent-store-stats) :versions)))
        (let ((history (org-agent-node-history id)))
          (should (= (length history) 2))
          (should (equal (plist-get (car (last history)) :body) "Beta's body.\n"))
          (should (equal (plist-get (car history) :body) "")))
        (should (= 1 (length (org-agent-node-history
                              (plist-get (org-agent-test-node-titled "Gamma") :id)))))))))

(ert-deftest org-agent-snapshot-and-rollback ()
  "Rollback restores the store as it was at a snapshot."
  (org-agent-test-with-store
    (with-temp-buffer
      (insert "* One\n* Two\n")
      (org-mode)
      (org-agent-ingest-buffer)
      (org-agent-snapshot "before")
      (goto-char (point-max))
      (insert "* Three\n")
      (org-agent-ingest-buffer)
      (should (equal (org-agent-test-titles (org-agent-query :type 'headline))
                     '("One" "Two" "Three")))
      (should (equal (plist-get (car (org-agent-snapshots)) :label) "before"))
      (org-agent-rollback 0)
      (should (equal (org-agent-test-titles (org-agent-query :type 'headline))
                     '("One" "Two")))
      (should-error (org-agent-rollback 5) :type 'org-agent-store-error))))

(ert-deftest org-agent-errors-come-by-kind ()
  "Callers can tell a wrong configuration from a store failure, and both are org-agent errors."
  (org-agent-test-with-store
    (let ((bad-backend (should-error (org-agent--list-models '(:type :telepathy :url "http://x/v1"))
                                     :type 'org-agent-config-error)))
      (should (string-match-p "unknown backend :type :telepathy" (cadr bad-backend))))
    (should-error (org-agent--stimulus '(:type :event :payload (:sensor :chat-message :text "hi"))
                                       '(:url "http://127.0.0.1:9/v1")
                                       '(:tier :fastest))
                  :type 'org-agent-config-error)
    (should-error (org-agent--embed '(:type :openai :url "http://x/v1") nil)
                  :type 'org-agent-config-error)
    (should-error (org-agent--set-redisplay-interval -1) :type 'org-agent-config-error)
    (should-error (org-agent--rollback 99) :type 'org-agent-store-error)
    ;; A shape the module cannot read is an error of the parent kind.
    (should-error (org-agent--stimulus '(:type :nonsense) nil nil) :type 'org-agent-error)
    (should-not (condition-case nil
                    (org-agent--stimulus '(:type :nonsense) nil nil)
                  (org-agent-config-error t)
                  (org-agent-error nil)))))

(ert-deftest org-agent-save-hook-reingests ()
  "With `org-agent-mode' on, saving an Org buffer updates the store off the main thread."
  (org-agent-test-with-notes
    (let ((org-agent-directories (list notes))
          (file (expand-file-name "journal.org" notes))
          done)
      (org-agent-mode 1)
      (unwind-protect
          (progn
            (should (org-agent-test-wait (lambda () (= (plist-get (org-agent-store-stats) :files) 5))))
            (with-current-buffer (find-file-noselect file)
              (let ((org-agent-ingest-functions
                     (list (lambda (e) (when (eq (plist-get e :type) 'ingested) (setq done e))))))
                (goto-char (point-max))
                (insert "*** 2026-11-22 Sunday :idea:\nWrote the save hook test.\n")
                (save-buffer)
                (should (org-agent-test-wait (lambda () done)))
                (should (equal (plist-get done :file) file))
                (should (member "2026-11-22 Sunday"
                                (org-agent-test-titles (org-agent-query :tag "idea")))))))
        (org-agent-mode -1)))))

(ert-deftest org-agent-latest-save-wins ()
  "When a buffer is saved again before its last ingest finished, the newest text wins."
  (org-agent-test-with-store
    (let ((file (make-temp-file "org-agent-latest" nil ".org")) results)
      (unwind-protect
          (with-current-buffer (find-file-noselect file)
            (dotimes (i 20)
              (erase-buffer)
              (insert (format "* Version %d\n" i))
              (dotimes (j 2000) (insert (format "** Filler %d\n" j)))
              (org-agent-ingest-buffer nil t (lambda (e) (push e results))))
            ;; Killing the buffer mid-ingest is harmless: the text was copied.
            (set-buffer-modified-p nil)
            (kill-buffer)
            (should (org-agent-test-wait (lambda () (= (length results) 20))))
            (should (cl-every (lambda (e) (memq (plist-get e :type) '(ingested superseded))) results))
            (should (equal (plist-get (car (org-agent-query :file file :level 1)) :title)
                           "Version 19")))
        (delete-file file)))))

;;;; A save read back from its file

(defun org-agent-test-save-and-wait (file)
  "Save the current buffer visiting FILE; return the `ingested' event of FILE."
  (let* (done
         (org-agent-ingest-functions
          (list (lambda (e)
                  (when (and (eq (plist-get e :type) 'ingested)
                             (equal (plist-get e :file) file))
                    (setq done e))))))
    (save-buffer)
    (should (org-agent-test-wait (lambda () done)))
    done))

(defmacro org-agent-test-with-saved-file (spec &rest body)
  "Visit a new file named by SPEC (VAR SUFFIX) in Org mode and run BODY there.
`org-agent-mode' is on, so saves re-ingest; VAR is bound to the file."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* ((dir (make-temp-file "org-agent-save" t))
            (,(car spec) (expand-file-name (concat "note" ,(cadr spec)) dir))
            (org-agent-directories nil)
            (org-directory nil))
       (org-agent-mode 1)
       (unwind-protect
           (with-current-buffer (find-file-noselect ,(car spec))
             (unless (derived-mode-p 'org-mode) (org-mode))
             (unwind-protect (progn ,@body)
               (set-buffer-modified-p nil)
               (kill-buffer)))
         (org-agent-mode -1)
         (delete-directory dir t)))))

(ert-deftest org-agent-save-is-read-from-the-file ()
  "A save of a UTF-8 Org buffer copies nothing: a worker reads the file."
  (org-agent-test-with-saved-file (file ".org")
    (insert "#+TODO: NEXT | DONE\n* NEXT Caf\u00e9 \u4e2d :idea:\nBody \u00e9.\n")
    ;; Org reads the #+TODO line when the mode starts.
    (org-mode)
    ;; The copy path would fail here: what the store gets must come from the disk.
    (cl-letf (((symbol-function 'org-agent--buffer-text)
               (lambda () (error "The buffer's text was copied"))))
      (should (equal (org-agent--saved-as-utf-8) '(nil nil)))
      (org-agent-test-save-and-wait file)
      (let ((node (org-agent-test-node-titled "Caf\u00e9 \u4e2d" file)))
        (should node)
        ;; The buffer's keywords went along: NEXT is a TODO keyword only here.
        (should (equal (plist-get node :todo) "NEXT"))
        (goto-char (plist-get node :begin))
        (should (looking-at-p "\\* NEXT Caf\u00e9")))
      ;; The newest save's text replaces the last.
      (goto-char (point-max))
      (insert "* Second\n")
      (org-agent-test-save-and-wait file)
      (should (org-agent-test-node-titled "Second" file)))))

(ert-deftest org-agent-save-with-dos-line-ends-is-read-from-the-file ()
  "A buffer written with CR LF line ends is stored as the buffer's text."
  (org-agent-test-with-saved-file (file ".org")
    (set-buffer-file-coding-system 'utf-8-dos)
    ;; A CR of the buffer's own stays (Emacs writes it before the line's CR LF).
    (insert "* One\nline\r\n* Two \u00e9\n")
    (cl-letf (((symbol-function 'org-agent--buffer-text)
               (lambda () (error "The buffer's text was copied"))))
      (should (equal (org-agent--saved-as-utf-8) '(nil t)))
      (org-agent-test-save-and-wait file))
    ;; Had the store lost that CR, or kept the file's, Two would start elsewhere.
    (let ((two (org-agent-test-node-titled "Two \u00e9" file)))
      (should two)
      (goto-char (plist-get two :begin))
      (should (looking-at-p "\\* Two")))))

(ert-deftest org-agent-save-of-compressed-file-copies-the-text ()
  "A .org.gz file (jka-compr) is not the buffer's text: the save copies it."
  (org-agent-test-with-saved-file (file ".org.gz")
    (should auto-compression-mode)
    (insert "* Packed \u00e9\nInside gzip.\n")
    (should-not (org-agent--saved-as-utf-8))
    (org-agent-test-save-and-wait file)
    ;; The file on disk really is compressed, so reading it would not give these nodes.
    (should (equal (with-temp-buffer
                     (set-buffer-multibyte nil)
                     (insert-file-contents-literally file nil 0 2)
                     (append (buffer-string) nil))
                   '(#x1f #x8b)))
    (should (org-agent-test-node-titled "Packed \u00e9" file))))

(ert-deftest org-agent-save-with-latin-1-cookie-copies-the-text ()
  "A file in another coding (a `coding:' cookie) still stores the buffer's text."
  (org-agent-test-with-saved-file (file ".org")
    (insert "# -*- coding: latin-1 -*-\n* Caf\u00e9 cr\u00e8me\n")
    (set-buffer-file-coding-system 'latin-1-unix)
    (should-not (org-agent--saved-as-utf-8))
    (org-agent-test-save-and-wait file)
    ;; Latin-1 on disk: é is one byte, which a UTF-8 read would not give back.
    (should (= (file-attribute-size (file-attributes file))
               (- (length (encode-coding-string (buffer-string) 'utf-8)) 2)))
    (should (org-agent-test-node-titled "Caf\u00e9 cr\u00e8me" file))))

(ert-deftest org-agent-racing-saves-leave-the-newest-text ()
  "Saves in quick succession, each read from the file on a worker: the last wins."
  (org-agent-test-with-saved-file (file ".org")
    (let (results)
      (dotimes (i 20)
        (erase-buffer)
        (insert (format "* Version %d\n" i))
        (dotimes (j 2000) (insert (format "** Filler %d\n" j)))
        (let ((after-save-hook nil))
          (save-buffer))
        (let ((request (org-agent--after-save)))
          (should (integerp request))
          (org-agent--add-callback request (lambda (e) (push e results)))))
      (should (org-agent-test-wait (lambda () (= (length results) 20))))
      (should (cl-every (lambda (e) (memq (plist-get e :type) '(ingested superseded)))
                        results))
      (should (equal (plist-get (car (org-agent-query :file file :level 1)) :title)
                     "Version 19")))))

(ert-deftest org-agent-directory-ingest ()
  "Directory ingest reports progress, skips unchanged files and drops deleted ones."
  (org-agent-test-with-notes
    (let ((org-agent-directories (list notes)) final)
      (org-agent-ingest-directory (lambda (e) (setq final e)))
      (should (org-agent-test-wait (lambda () final)))
      (should (eq (plist-get final :type) 'directory-done))
      (should (= (plist-get final :files) 5))
      (should (= (plist-get final :ingested) 5))
      (setq final nil)
      (org-agent-ingest-directory (lambda (e) (setq final e)))
      (should (org-agent-test-wait (lambda () final)))
      (should (= (plist-get final :unchanged) 5))
      ;; Delete one file and rename another: both old names leave the store.
      (delete-file (expand-file-name "journal.org" notes))
      (rename-file (expand-file-name "tasks.org" notes) (expand-file-name "todo.org" notes))
      (setq final nil)
      (org-agent-ingest-directory (lambda (e) (setq final e)))
      (should (org-agent-test-wait (lambda () final)))
      (should (= (plist-get final :removed) 2))
      (should (null (org-agent-query :file (expand-file-name "journal.org" notes))))
      (should (org-agent-query :file (expand-file-name "todo.org" notes))))))

(ert-deftest org-agent-find-jumps-to-headline ()
  "`org-agent-find' offers outline paths and jumps to the chosen headline."
  (org-agent-test-with-notes
    (org-agent-ingest-file (expand-file-name "projects.org" notes))
    (let (offered)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt collection &rest _)
                   ;; What a user typing part of the title gets with the default
                   ;; completion styles: the headline's category matches substrings.
                   (let ((matches (completion-all-completions "export pipe" collection nil 11)))
                     (setcdr (last matches) nil)
                     (setq offered (all-completions "" collection))
                     (car matches)))))
        (org-agent-find))
      (should (seq-find (lambda (k) (string-match-p "\\`NEXT Launch the field-notes website/Write the export pipeline  :work:project:code:" k))
                        offered))
      (should (equal (buffer-file-name) (expand-file-name "projects.org" notes)))
      (should (looking-at-p "\\*\\* NEXT Write the export pipeline")))))

;; Titles beyond ASCII (one outside the BMP), so the candidates' character
;; offsets and the query's two kinds of strings are both exercised.
(defconst org-agent-test-find-text
  "#+TITLE: Find\n\n* Café ☕ plans :trip:\n** TODO Book the 🎉 train\n*** Seat by the window\n* DONE Plain ascii headline\n"
  "An Org file for the candidates of `org-agent-find'.")

(ert-deftest org-agent-find-candidates-and-visit ()
  "Each headline is one candidate: TODO, outline path, tags, file; RET visits it."
  (org-agent-test-with-notes
    (let ((file (expand-file-name "find.org" notes)))
      (with-temp-file file (insert org-agent-test-find-text))
      (org-agent-ingest-file file)
      (should (equal (org-agent--headline-candidates)
                     '("Café ☕ plans  :trip:  — find.org"
                       "TODO Café ☕ plans/Book the 🎉 train  :trip:  — find.org"
                       "Café ☕ plans/Book the 🎉 train/Seat by the window  :trip:  — find.org"
                       "DONE Plain ascii headline  — find.org")))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt collection &rest _)
                   (seq-find (lambda (c) (string-search "window" c))
                             (all-completions "" collection)))))
        (org-agent-find))
      (should (equal (buffer-file-name) file))
      (should (looking-at-p "\\*\\*\\* Seat by the window"))
      ;; A candidate the store no longer has (the file changed meanwhile).
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (&rest _) "DONE Gone  — find.org")))
        (should-error (org-agent-find) :type 'user-error)))))

;; Headlines where one word occurs in many, some twice, one in another case.
(defconst org-agent-test-find-more
  "* Garden plans :home:\n** TODO Plant the garden beds\n** Garden budget review\n* Café de la Gare\n** TODO Read about gardening\n"
  "A second Org file for `org-agent-find', with shared words.")

(defun org-agent-test-lisp-filter (input candidates &optional ignore-case)
  "The CANDIDATES where each space-separated word of INPUT occurs, in Lisp.
With IGNORE-CASE both are compared in lower case."
  (let ((words (split-string input " " t)))
    (seq-filter (lambda (c)
                  (cl-every (lambda (w)
                              (if ignore-case
                                  (string-search (downcase w) (downcase c))
                                (string-search w c)))
                            words))
                candidates)))

(defun org-agent-test-style-all (input)
  "Return what the category's styles offer for INPUT, base size dropped."
  (let ((all (completion-all-completions input #'org-agent--headline-table nil
                                         (length input))))
    (when all (setcdr (last all) nil))
    all))

(defmacro org-agent-test-with-find-notes (&rest body)
  "Run BODY with a store holding the two `org-agent-find' test files.
`notes' is their directory, `file' the first one's name."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-notes
     (let ((file (expand-file-name "find.org" notes))
           (more (expand-file-name "more.org" notes)))
       (with-temp-file file (insert org-agent-test-find-text))
       (with-temp-file more (insert org-agent-test-find-more))
       (org-agent-ingest-file file)
       (org-agent-ingest-file more)
       ,@body)))

(ert-deftest org-agent-find-style-matches-as-lisp-would ()
  "The module's matches are the Lisp filter's over every candidate, in order."
  (org-agent-test-with-find-notes
    (let ((all (org-agent--headline-candidates)))
      (should (= (length all) 9))
      ;; The category's default style is the module's.
      (should (eq (car (completion--styles (completion-metadata "" #'org-agent--headline-table nil)))
                  'org-agent-substring))
      (dolist (input '("" "garden" "Garden" "garden budget" "budget garden" "  garden   plan "
                       "☕" "🎉 train" "Café" "café" "é d" ":home:" "— more.org" "nothing at all"
                       "TODO" "/" "Seat by the window  :trip:  — find.org"))
        (dolist (fold '(nil t))
          (let* ((completion-ignore-case fold)
                 (expected (org-agent-test-lisp-filter input all fold)))
            (should (equal (cons input (org-agent-test-style-all input))
                           (cons input expected)))
            (should (equal (org-agent--headline-matches input fold) expected)))))
      ;; Words in any order, a thing the built-in substring style does not do.
      (should (equal (org-agent-test-style-all "budget Garden")
                     '("Garden plans/Garden budget review  :home:  — more.org")))
      (let ((completion-ignore-case nil))
        (should-not (org-agent-test-style-all "CAFÉ")))
      (let ((completion-ignore-case t))
        (should (= (length (org-agent-test-style-all "CAFÉ")) 5)))
      ;; What matched is shown as the built-in styles show it.
      (let ((hit (car (org-agent-test-style-all "budget"))))
        (should (eq (get-text-property (string-search "budget" hit) 'face hit)
                    'completions-common-part))
        (should-not (get-text-property 0 'face hit)))
      ;; Past the limit, nothing is highlighted.
      (let ((org-agent-find-highlight-limit 1)
            (completion-ignore-case nil))
        (should (next-single-property-change 0 'face (car (org-agent-test-style-all "budget"))))
        (let ((two (org-agent-test-style-all "garden")))
          (should (= (length two) 2))
          (should-not (next-single-property-change 0 'face (car two)))
          (should-not (next-single-property-change 0 'face (cadr two))))))))

(ert-deftest org-agent-find-style-try-completion ()
  "The style's try function: nil, t, the sole match, or the common text after."
  (org-agent-test-with-find-notes
    (let ((table #'org-agent--headline-table)
          (completion-ignore-case nil))
      (should-not (completion-try-completion "nothing" table nil 7))
      (should (equal (completion-try-completion "window" table nil 6)
                     '("Café ☕ plans/Book the 🎉 train/Seat by the window  :trip:  — find.org" . 68)))
      (let ((sole "DONE Plain ascii headline  — find.org"))
        (should (eq (completion-try-completion sole table nil (length sole)) t)))
      ;; "Gard" is followed by "en plans" in every match: TAB adds it.
      (should (equal (completion-try-completion "Gard" table nil 4) '("Garden plans" . 12)))
      (should (equal (completion-try-completion "garden" table nil 6) '("garden" . 6)))
      (should (equal (completion-try-completion "Garden " table nil 7) '("Garden " . 7)))
      (should (equal (completion-try-completion "Gard" table nil 2) '("Gard" . 2)))
      (let ((completion-ignore-case t))
        (should (equal (completion-try-completion "PLAIN" table nil 5)
                       '("DONE Plain ascii headline  — find.org" . 37)))
        (should (equal (car (completion-try-completion "cAFÉ ☕ P" table nil 8))
                       "cAFÉ ☕ Plans"))))))

(ert-deftest org-agent-find-table-for-any-style ()
  "The table answers every completion action; other styles work through it."
  (org-agent-test-with-find-notes
    (let* ((table #'org-agent--headline-table)
           (all (org-agent--headline-candidates))
           (sole "DONE Plain ascii headline  — find.org"))
      (should (equal (all-completions "" table) all))
      (should (equal (all-completions "Garden" table) (seq-filter (lambda (c) (string-prefix-p "Garden" c)) all)))
      (should (equal (try-completion "DONE P" table) sole))
      (let ((completion-ignore-case t))
        (should (equal (all-completions "garden" table)
                       (seq-filter (lambda (c) (string-prefix-p "garden" c t)) all)))
        (should (equal (try-completion "done p" table) sole)))
      ;; What no style matches makes no list of every candidate (basic, the
      ;; category's second style, asks the table for what starts with it).
      (let ((org-agent--headline-session (list nil)))
        (should-not (completion-all-completions "zzz qqq" table nil 7))
        (should-not (completion-try-completion "zzz qqq" table nil 7))
        (should (equal (all-completions "Garden" table)
                       (seq-filter (lambda (c) (string-prefix-p "Garden" c)) all)))
        (should-not (car org-agent--headline-session)))
      ;; test-completion asks the module: a candidate, not a part of one, not a gone one.
      (should (eq (test-completion sole table) t))
      (should-not (test-completion "DONE Plain" table))
      (should-not (test-completion "DONE Gone  — find.org" table))
      (should-not (let ((completion-ignore-case nil)) (test-completion (upcase sole) table)))
      (should (let ((completion-ignore-case t)) (test-completion (upcase sole) table)))
      (should (equal (completion-metadata "" table nil) '(metadata (category . org-agent-headline))))
      ;; The user's own styles for the category go through the table.
      (let ((completion-category-overrides '((org-agent-headline (styles basic)))))
        (should (equal (org-agent-test-style-all "Café ☕ plans/B")
                       '("Café ☕ plans/Book the 🎉 train/Seat by the window  :trip:  — find.org")))
        (should-not (org-agent-test-style-all "window")))
      (let ((completion-category-overrides '((org-agent-headline (styles flex)))))
        (should (member "DONE Plain ascii headline  — find.org" (org-agent-test-style-all "Plnasc")))
        (should-not (org-agent-test-style-all "zzq")))
      ;; Within one reading the full list is made once.
      (let ((org-agent--headline-session (list nil)))
        (should (equal (all-completions "" table) all))
        (let ((kept (car org-agent--headline-session)))
          (should (equal kept all))
          (should (equal (all-completions "Café" table)
                         (seq-filter (lambda (c) (string-prefix-p "Café" c)) all)))
          (should (eq (car org-agent--headline-session) kept))))
      (should-not org-agent--headline-session))))

(ert-deftest org-agent-find-typed-in-the-minibuffer ()
  "Through the command loop, as typed: words, TAB, RET; require-match holds."
  (org-agent-test-with-find-notes
    (let ((completion-ignore-case nil))
      (switch-to-buffer "*scratch*")
      ;; One word that is the start of one headline's: RET completes it and jumps.
      (execute-kbd-macro (kbd "M-x org-agent-find RET window RET"))
      (should (equal (buffer-file-name) file))
      (should (looking-at-p "\\*\\*\\* Seat by the window"))
      ;; Two words out of order, in another file.
      (switch-to-buffer "*scratch*")
      (execute-kbd-macro (kbd "M-x org-agent-find RET budget SPC Garden RET"))
      (should (equal (buffer-file-name) more))
      (should (looking-at-p "\\*\\* Garden budget review"))
      ;; With the user's styles for the category: basic completes the start.
      (switch-to-buffer "*scratch*")
      (let ((completion-category-overrides '((org-agent-headline (styles basic)))))
        (execute-kbd-macro (kbd "M-x org-agent-find RET DONE SPC P TAB RET")))
      (should (equal (buffer-file-name) file))
      (should (looking-at-p "\\* DONE Plain ascii headline"))
      ;; Require-match: RET on what is no headline does not leave the minibuffer
      ;; (`completing-read' never returns); C-g does.
      (switch-to-buffer "*scratch*")
      (let* ((read (symbol-function 'completing-read))
             (returned 'nothing)
             (minibuffer-message-timeout 0))
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (prompt &rest args)
                     (let ((r (apply read prompt args)))
                       (when (equal prompt "Headline: ") (setq returned r))
                       r))))
          (condition-case nil
              (execute-kbd-macro (kbd "M-x org-agent-find RET zzz SPC qqq RET C-g"))
            (quit nil)))
        (should (eq returned 'nothing))
        (should (equal (buffer-name) "*scratch*"))
        ;; The same keys without the words: RET takes the one match.
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (prompt &rest args)
                     (let ((r (apply read prompt args)))
                       (when (equal prompt "Headline: ") (setq returned r))
                       r))))
          (execute-kbd-macro (kbd "M-x org-agent-find RET qqq C-a C-k ascii RET")))
        (should (equal returned "DONE Plain ascii headline  — find.org"))))))

(ert-deftest org-agent-query-plists-and-records ()
  "Plists leave nil keys out; `:lazy' records read the same fields on demand."
  (org-agent-test-with-notes
    (let ((file (expand-file-name "find.org" notes)))
      (with-temp-file file (insert org-agent-test-find-text))
      (org-agent-ingest-file file)
      (let* ((plain (car (org-agent-query :file file :level 1)))
             (cafe-title (plist-get plain :title)))
        ;; No TODO, priority or planning: those keys are not there, and read as nil.
        (should (equal cafe-title "Café ☕ plans"))
        (should (multibyte-string-p cafe-title))
        (dolist (key '(:todo :todo-type :priority :scheduled :deadline :closed))
          (should-not (plist-member plain key))
          (should-not (plist-get plain key)))
        (should (equal (plist-get plain :tags) '("trip")))
        (should (equal (plist-get plain :file) file))
        ;; ASCII text is a unibyte string, as the reader makes it, and `equal' to any other.
        (let ((done (car (org-agent-query :file file :todo "DONE"))))
          (should (equal (plist-get done :title) "Plain ascii headline"))
          (should (equal (plist-get done :title) (string-to-multibyte "Plain ascii headline")))
          (should (eq (plist-get done :todo-type) 'done))))
      (let* ((records (org-agent-query :file file :type 'headline :lazy t))
             (plists (org-agent-query :file file :type 'headline))
             (train (nth 1 records)))
        (should (= (length records) 4))
        (should (cl-every #'org-agent-node-record-p records))
        (should-not (org-agent-node-record-p (car plists)))
        ;; A record's plist is the query's plist; its fields are the plist's.
        (should (equal (mapcar #'org-agent-node-plist records) plists))
        (should (equal (org-agent-node-plist train '(:title :todo))
                       '(:title "Book the 🎉 train" :todo "TODO")))
        (dolist (key '(:id :title :todo :tags :inherited-tags :level :begin :parent :hash))
          (should (equal (org-agent-node-get train key) (plist-get (nth 1 plists) key))))
        (should (equal (org-agent-node-get (nth 1 plists) :title) "Book the 🎉 train"))
        (should (equal (org-agent-node-get train :inherited-tags) '("trip")))
        (should (equal (org-agent-node-get train :body) ""))
        (should-error (org-agent-node-get train :nonsense))
        ;; A record reads the node as it was queried; a new query sees the change.
        (with-temp-file file
          (insert (replace-regexp-in-string "train" "bus" org-agent-test-find-text)))
        (org-agent-ingest-file file)
        (should (equal (org-agent-node-get train :title) "Book the 🎉 train"))
        (should (equal (org-agent-node-get (nth 1 (org-agent-query :file file :type 'headline :lazy t))
                                           :title)
                       "Book the 🎉 bus"))))))

(ert-deftest org-agent-store-info-shows-stats ()
  "`org-agent-store-info' reports the statistics."
  (org-agent-test-with-notes
    (org-agent-ingest-file (expand-file-name "tasks.org" notes))
    (org-agent-flush)
    (let ((stats (org-agent-store-stats)))
      (should (= (plist-get stats :files) 1))
      (should (= (plist-get stats :headlines) 9))
      (should (> (plist-get stats :bytes-on-disk) 0)))
    (should (string-match-p "1 files, 9 headlines" (org-agent-store-info)))))

(defun org-agent-test-run-emacs (&rest forms)
  "Run FORMS in a separate batch Emacs with org-agent loaded; return its output."
  (with-temp-buffer
    (let ((status (call-process (expand-file-name invocation-name invocation-directory)
                                nil t nil "-Q" "--batch"
                                "-L" (expand-file-name "tests/elisp" org-agent-test-root)
                                "-l" "org-agent-test-setup"
                                "--eval" (prin1-to-string `(progn ,@forms)))))
      (unless (eql status 0)
        (error "Child Emacs failed (%s): %s" status (buffer-string)))
      (buffer-string))))

(ert-deftest org-agent-persistence-across-processes ()
  "What one Emacs process ingested, the next one loads from disk."
  (org-agent-test-with-notes
    (let ((state (make-temp-file "org-agent-persist" t)))
      (unwind-protect
          (progn
            (org-agent-test-run-emacs
             `(org-agent--store-open ,state)
             `(dolist (f (directory-files ,notes t "\\.org\\'")) (org-agent-ingest-file f))
             '(org-agent-flush))
            (let ((out (org-agent-test-run-emacs
                        `(org-agent--store-open ,state)
                        '(princ (format "RESULT %S\n"
                                        (list (plist-get (org-agent-store-stats) :headlines)
                                              (mapcar (lambda (n) (plist-get n :title))
                                                      (org-agent-query :projects t))
                                              (plist-get (org-agent-node "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a02") :todo)))))))
              (should (string-match "RESULT \\(.*\\)" out))
              (should (equal (car (read-from-string (match-string 1 out)))
                             '(24 ("Launch the field-notes website" "Quarterly report") "NEXT")))))
        (delete-directory state t)))))

(ert-deftest org-agent-corrupt-store-is-set-aside ()
  "A corrupt store is reported, set aside and replaced by an empty one."
  (let ((state (make-temp-file "org-agent-corrupt" t)))
    (unwind-protect
        (progn
          (with-temp-file (expand-file-name "store.log" state)
            (set-buffer-multibyte nil)
            (insert "ORG-AGENT-LOG-1\nOAB1 this is not a batch at all"))
          (let ((report (org-agent--store-open state)))
            (should (stringp (plist-get report :rebuilt)))
            (should (= 0 (plist-get report :nodes)))
            (should (directory-files state nil "\\`store\\.corrupt-"))
            (with-temp-buffer
              (insert "* Fresh\n")
              (org-mode)
              (org-agent-ingest-buffer))
            (should (= 1 (org-agent-count :type 'headline)))))
      (org-agent--store-close)
      (delete-directory state t))))

;; Raw bytes are not valid UTF-8; each is one character in the buffer.
(ert-deftest org-agent-buffer-with-raw-bytes ()
  "A buffer holding raw bytes ingests, with positions that still match the buffer."
  (org-agent-test-with-store
    (with-temp-buffer
      (insert "* Caf" (unibyte-string #xe9) " menu\n* Second\n")
      (org-mode)
      (should (= (org-agent-ingest-buffer) 3))
      (let ((second (org-agent-test-node-titled "Second")))
        (goto-char (plist-get second :begin))
        (should (looking-at-p "\\* Second"))))))

;; 512 KiB of raw bytes took 120 s on the main thread (`replace-regexp-in-string' over
;; each one); this megabyte would take minutes if that work were not linear.
(ert-deftest org-agent-megabyte-of-raw-bytes-ingests ()
  "A buffer of raw bytes ingests at once; each byte is one character, as in the buffer."
  (org-agent-test-with-store
    (with-temp-buffer
      (insert "* First\n")
      (dotimes (i 16)
        (insert (make-string 65536 (+ #x3fff80 (* i 8))) "\n* Chunk " (number-to-string i) "\n"))
      (org-mode)
      (should (= (org-agent-ingest-buffer) 18))
      (dotimes (i 16)
        (let ((node (org-agent-test-node-titled (format "Chunk %d" i))))
          (goto-char (plist-get node :begin))
          (should (looking-at-p (format "\\* Chunk %d$" i)))
          (should (= (plist-get node :end)
                     (if (< i 15)
                         (plist-get (org-agent-test-node-titled (format "Chunk %d" (1+ i))) :begin)
                       (point-max))))))
      (let ((body (plist-get (org-agent-node (plist-get (org-agent-test-node-titled "First") :id))
                             :body)))
        (should (= (length body) 65537))
        (should (string-match-p "\\`\ufffd+\n\\'" body)))
      ;; The asynchronous path, which the save hook takes, copies the same way.
      (let (done)
        (org-agent-ingest-buffer nil t (lambda (e) (setq done e)))
        (should (org-agent-test-wait (lambda () done)))
        (should (eq (plist-get done :type) 'ingested))))))

(ert-deftest org-agent-save-hook-with-raw-bytes ()
  "Saving a buffer that holds raw bytes re-ingests it, with positions that match."
  (org-agent-test-with-store
    (let ((file (make-temp-file "org-agent-raw" nil ".org"))
          (org-agent-directories nil)
          (org-directory nil)
          done)
      (org-agent-mode 1)
      (unwind-protect
          (with-current-buffer (find-file-noselect file)
            (let ((org-agent-ingest-functions
                   (list (lambda (e) (when (eq (plist-get e :type) 'ingested) (setq done e))))))
              (insert "* Binary\n" (make-string 300000 #x3fffe9) "\n* After the blob\n")
              ;; UTF-8 writes each raw byte back as the byte it was read from.
              (let ((coding-system-for-write 'utf-8-unix))
                (save-buffer))
              (should (org-agent-test-wait (lambda () done)))
              (let ((after (org-agent-test-node-titled "After the blob" file)))
                (goto-char (plist-get after :begin))
                (should (looking-at-p "\\* After the blob"))))
            (set-buffer-modified-p nil)
            (kill-buffer))
        (org-agent-mode -1)
        (delete-file file)))))

(ert-deftest org-agent-file-name-with-raw-byte ()
  "A file whose name is not valid UTF-8 ingests and keeps its name (Unix names are bytes)."
  (org-agent-test-with-store
    (let* ((dir (file-name-as-directory (make-temp-file "org-agent-names" t)))
           ;; The byte \351 alone is not UTF-8: Emacs reads it as a raw byte.
           (name (concat dir (decode-coding-string "caf\351.org" 'utf-8-unix)))
           (plain (expand-file-name "plain.org" dir)))
      (unwind-protect
          (progn
            (write-region "* Menu\n** Soup\n" nil name)
            (write-region "* Plain\n" nil plain)
            (should (member name (directory-files dir t "\\.org\\'")))
            (should (= (org-agent-ingest-file name) 3))
            (let ((soup (org-agent-test-node-titled "Soup" name)))
              (should (equal (plist-get soup :file) name))
              (should (equal (org-agent--node-at name (plist-get soup :begin))
                             (plist-get soup :id))))
            (should (org-agent-ingest-file name t))
            (let ((org-agent-directories (list dir)) final)
              (org-agent-ingest-directory (lambda (e) (setq final e)))
              (should (org-agent-test-wait (lambda () final)))
              (should (null (plist-get final :errors)))
              (should (= (plist-get final :files) 2))
              (should (equal (sort (delete-dups (mapcar (lambda (n) (plist-get n :file))
                                                        (org-agent-query :type 'headline)))
                                   #'string<)
                             (sort (list name plain) #'string<))))
            (delete-file name)
            ;; Gone: it leaves the store, without an error.
            (should (eql (org-agent-ingest-file name) 0))
            (should (null (org-agent-query :file name))))
        (delete-directory dir t)))))

(ert-deftest org-agent-ingest-file-of-a-deleted-file-removes-it ()
  "Ingesting a deleted file removes its nodes from the store and says so.
Nothing is signalled, a second time either; a file that exists but
cannot be read (a directory) still signals `org-agent-store-error'."
  (org-agent-test-with-store
    (let* ((dir (file-name-as-directory (make-temp-file "org-agent-gone" t)))
           (file (expand-file-name "gone.org" dir))
           (kept (expand-file-name "kept.org" dir))
           (messages nil))
      (unwind-protect
          (cl-letf (((symbol-function 'message)
                     (lambda (format &rest args)
                       (push (apply #'format-message format args) messages))))
            (write-region "* Gone one\n** Gone two\n" nil file)
            (write-region "* Kept\n" nil kept)
            (should (= (org-agent-ingest-file file) 3))
            (should (= (org-agent-ingest-file kept) 2))
            (should (equal (org-agent-test-titles (org-agent-query :file file :type 'headline))
                           '("Gone one" "Gone two")))
            (delete-file file)
            (setq messages nil)
            (should (eql (org-agent-ingest-file file) 0))
            (should (string-match-p (regexp-quote (concat file " no longer exists; its 3 nodes"))
                                    (car messages)))
            (should (null (org-agent-query :file file)))
            (should (null (org-agent-test-node-titled "Gone one")))
            (should (null (org-agent-test-node-titled "Gone two")))
            (should (org-agent-test-node-titled "Kept" kept))
            ;; The log keeps it too.
            (should (seq-find (lambda (entry)
                                (string-match-p (regexp-quote (concat file " no longer exists"))
                                                (nth 3 entry)))
                              (org-agent--log-since 0)))
            ;; Gone again: still no error, and the message says it was not there.
            (setq messages nil)
            (should (eql (org-agent-ingest-file file) 0))
            (should (string-match-p "does not exist" (car messages)))
            ;; There but unreadable: an error that names the file.
            (let ((unreadable (expand-file-name "dir.org" dir)))
              (make-directory unreadable)
              (let ((err (should-error (org-agent-ingest-file unreadable)
                                       :type 'org-agent-store-error)))
                (should (string-match-p (regexp-quote unreadable)
                                        (error-message-string err))))))
        (delete-directory dir t)))))

(defmacro org-agent-test-starting (state &rest body)
  "Run BODY as if org-agent started afresh with its state in STATE.
Warnings shown meanwhile are collected in `warnings', newest first."
  (declare (indent 1) (debug t))
  `(let ((org-agent--started nil)
         (org-agent--directory-ingest nil)
         (org-agent-state-directory ,state)
         (warnings nil))
     (cl-letf (((symbol-function 'display-warning)
                (lambda (type message &rest _) (push (list type message) warnings))))
       (unwind-protect (progn ,@body)
         (org-agent-test-wait (lambda () (null org-agent--directory-ingest)))
         (org-agent--store-close)))))

(ert-deftest org-agent-unreadable-store-is-set-aside-with-one-warning ()
  "A store.log that cannot be read (here a directory) no longer stops org-agent.
It is set aside, one warning names where, and the store is rebuilt."
  (org-agent-test-with-notes
    (let ((state (make-temp-file "org-agent-state" t))
          (org-agent-directories (list notes)))
      (unwind-protect
          (org-agent-test-starting state
            (make-directory (expand-file-name "store.log" state))
            (should (org-agent--start))
            (should (= (length warnings) 1))
            (pcase-let ((`(,type ,message) (car warnings)))
              (should (eq type 'org-agent))
              (let ((aside (car (directory-files state t "\\`store\\.unusable-"))))
                (should (file-directory-p aside))
                (should (string-match-p (regexp-quote aside) message))))
            (should (org-agent-test-wait
                     (lambda () (= (plist-get (org-agent-store-stats) :files) 5))))
            (org-agent-flush)
            (should (file-regular-p (expand-file-name "store.log" state))))
        (delete-directory state t)))))

;; A crash tears only the batch being written: a log cut short of what was
;; committed (here to its bare header, a batch boundary) is damage, and the
;; user is told, not left with a store quietly missing notes.
(ert-deftest org-agent-cut-store-is-reported-set-aside-and-rebuilt ()
  "A store log cut short of its seal warns, is set aside and is rebuilt."
  (org-agent-test-with-notes
    (let ((state (make-temp-file "org-agent-state" t))
          (org-agent-directories (list notes)))
      (unwind-protect
          (progn
            (org-agent--store-close)
            (let ((report (org-agent--store-open state)))
              (should-not (plist-get report :rebuilt)))
            (dolist (f (directory-files notes t "\\.org\\'"))
              (org-agent-ingest-file f))
            (org-agent--store-close)
            (should (file-regular-p (expand-file-name "store.log.seal" state)))
            (let ((log (expand-file-name "store.log" state)))
              (with-temp-buffer
                (set-buffer-multibyte nil)
                (insert-file-contents-literally log nil 0 16)
                (write-region nil nil log nil 'silent)))
            (org-agent-test-starting state
              (should (org-agent--start))
              (should (= (length warnings) 1))
              (pcase-let ((`(,type ,message) (car warnings)))
                (should (eq type 'org-agent))
                (should (string-match-p "cut, not torn by a crash" message))
                (let ((aside (car (directory-files state t "\\`store\\.corrupt-"))))
                  (should aside)
                  (should (= 16 (file-attribute-size (file-attributes aside))))
                  (should (string-match-p (regexp-quote aside) message))))
              (should (org-agent-test-wait
                       (lambda () (= (plist-get (org-agent-store-stats) :files) 5))))))
        (delete-directory state t)))))

(defun org-agent-test-all-stored-p (dir)
  "Return non-nil when every Org file under DIR is in the store with its headlines."
  (cl-every (lambda (f)
              (= (org-agent-count :file f :type 'headline)
                 (with-temp-buffer
                   (insert-file-contents f)
                   (how-many "^\\*+ " (point-min) (point-max)))))
            (directory-files dir t "\\.org\\'")))

(ert-deftest org-agent-start-on-corrupt-store-ingests-once ()
  "Turning the mode on over a corrupt store runs one directory ingest, not two.
And when it reports done, every file is in the store."
  (org-agent-test-with-notes
    (let ((state (make-temp-file "org-agent-state" t))
          (org-agent-directories (list notes))
          (calls 0)
          done-ok)
      (with-temp-file (expand-file-name "store.log" state)
        (set-buffer-multibyte nil)
        (insert "ORG-AGENT-LOG-1\nOAB1 damaged"))
      (unwind-protect
          (org-agent-test-starting state
            (advice-add 'org-agent--ingest-directories-async :before
                        (lambda (&rest _) (cl-incf calls))
                        '((name . org-agent-test-count)))
            (unwind-protect
                (progn
                  (org-agent-mode 1)
                  (should (= (length warnings) 1))
                  ;; A request for the same directories joins the one running.
                  (should (equal (org-agent-ingest-directory
                                  (lambda (_) (setq done-ok (org-agent-test-all-stored-p notes))))
                                 (car org-agent--directory-ingest)))
                  (should (org-agent-test-wait (lambda () done-ok)))
                  (should (= calls 1)))
              (org-agent-mode -1)
              (advice-remove 'org-agent--ingest-directories-async 'org-agent-test-count)))
        (delete-directory state t)))))

(ert-deftest org-agent-directory-done-means-stored ()
  "Directory ingests asked for together report done only once every file is stored."
  (org-agent-test-with-notes
    (let ((org-agent-directories (list notes))
          (org-agent--directory-ingest nil)
          results)
      (dotimes (i 30)
        (write-region (mapconcat (lambda (j) (format "* H%d %d\n" i j)) (number-sequence 1 200) "")
                      nil (expand-file-name (format "extra-%d.org" i) notes)))
      (let ((first (org-agent-ingest-directory
                    (lambda (_) (push (org-agent-test-all-stored-p notes) results))))
            (second (org-agent-ingest-directory
                     (lambda (_) (push (org-agent-test-all-stored-p notes) results)))))
        (should (equal first second))
        (should (org-agent-test-wait (lambda () (= (length results) 2))))
        (should (equal results '(t t)))
        ;; Once done, a new request starts a new ingest (awaited: the store closes next).
        (let ((done nil))
          (should-not (equal (org-agent-ingest-directory (lambda (_) (setq done t))) first))
          (should (org-agent-test-wait (lambda () done))))))))

(ert-deftest org-agent-clear-error-without-cargo ()
  "Building without cargo says what is missing."
  (let* ((org-agent-cargo-program "no-such-cargo-here")
         (err (should-error (org-agent--cargo) :type 'org-agent-module-error)))
    (should (string-match-p "no-such-cargo-here.*not found" (cadr err)))))

(ert-deftest org-agent-stale-loaded-module-needs-restart ()
  "A loaded module of another version asks for a restart."
  (let* ((org-agent-version "0.0.0-other")
         (err (should-error (org-agent--load-module) :type 'org-agent-module-error)))
    (should (string-match-p "restart Emacs" (cadr err)))))

(provide 'org-agent-store-test)
;;; org-agent-store-test.el ends here
