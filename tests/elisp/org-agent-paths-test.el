;;; org-agent-paths-test.el --- Symbolic links defeat neither privacy nor confinement -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server: a note that is a symbolic link to a private file stays
;; private (the module says so, and a scripted model's reads of it are
;; refused in words that name nothing); an edit through a link out of
;; `org-agent-directories' never writes, and a preview through a link
;; inside them names the real file.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-actuator)
(require 'org-agent-test-server)
(require 'cl-lib)
(require 'json)

(defconst org-agent-paths-test--secret "WOMBAT-LEDGER"
  "Words only the private file holds.")

(defmacro org-agent-paths-test--with-notes (&rest body)
  "Run BODY in a fresh chat over notes with links, against the test server.
`notes' is the notes' directory (`org-agent-directories'), `vault'
a directory outside it holding the private diary.org, `outside'
one holding target.org; notes/innocent.org links to the diary,
notes/link.org to the target, notes/alias.org to notes/plain.org.
`finished' holds (CONVERSATION ANSWER) once a turn ends."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((root (file-truename (make-temp-file "org-agent-paths" t)))
        (notes (expand-file-name "notes" root))
        (vault (expand-file-name "vault" root))
        (outside (expand-file-name "outside" root))
        (org-agent-directories (list notes))
        (org-agent-private-files '("diary.org")))
     (ignore vault outside)
     (unwind-protect
         (progn
           (dolist (d (list notes vault outside)) (make-directory d t))
           (with-temp-file (expand-file-name "plain.org" notes)
             (insert "* TODO Buy stamps\nAt the post office.\n"))
           (with-temp-file (expand-file-name "diary.org" vault)
             (insert (format "* TODO Pay the %s debt\nThe %s account is overdrawn.\n"
                             org-agent-paths-test--secret org-agent-paths-test--secret)))
           (with-temp-file (expand-file-name "target.org" outside)
             (insert "* TODO Outside task\n"))
           (make-symbolic-link (expand-file-name "diary.org" vault)
                               (expand-file-name "innocent.org" notes))
           (make-symbolic-link (expand-file-name "target.org" outside)
                               (expand-file-name "link.org" notes))
           (make-symbolic-link (expand-file-name "plain.org" notes)
                               (expand-file-name "alias.org" notes))
           (dolist (f (directory-files notes t "\\.org\\'"))
             (org-agent-ingest-file f))
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (org-agent-test-kill-file-buffers root)
       (delete-directory root t))))

(defun org-agent-paths-test--id (title)
  "The store id of the headline TITLE."
  (plist-get (car (seq-filter (lambda (n) (equal (plist-get n :title) title))
                              (org-agent-query :type 'headline)))
             :id))

(defun org-agent-paths-test--send (text)
  "Type TEXT in the chat and send it."
  (goto-char (point-max))
  (insert text)
  (org-agent-chat-send))

(defun org-agent-paths-test--tool-messages (body)
  "The contents of the `tool' messages in the request BODY."
  (delq nil (mapcar (lambda (m) (and (equal (cdr (assoc "role" m)) "tool")
                                     (cdr (assoc "content" m))))
                    (cdr (assoc "messages" body)))))

(ert-deftest org-agent-paths-a-symlinked-private-note-stays-private ()
  "A note linking to a private file is private, and the model learns nothing of it."
  (org-agent-paths-test--with-notes
    (let* ((link (expand-file-name "innocent.org" notes))
           (secret-id (org-agent-paths-test--id
                       (format "Pay the %s debt" org-agent-paths-test--secret))))
      (org-agent--send-privacy)
      ;; The module judges the note by the file it leads to.
      (should secret-id)
      (should (org-agent--private-p secret-id))
      (should-not (org-agent--private-p (org-agent-paths-test--id "Buy stamps")))
      (should-error (org-agent--redact-private (with-temp-buffer
                                                 (insert-file-contents link)
                                                 (buffer-string))
                                               link))
      ;; A scripted model reads it every way it can.
      (org-agent-test-server-push
       :text "" :calls `[("read_node" ((id . ,secret-id)))
                         ("search_notes" ((text . "overdrawn")))
                         ("query_notes" ((todo . "TODO")))
                         ("read_file" ((path . ,link)))
                         ("list_directory" ((path . ,notes)))
                         ("list_files" ,(make-hash-table))])
      (org-agent-test-server-push :text "Nothing there.")
      (org-agent-paths-test--send "What do I owe?")
      (should (org-agent-test-wait (lambda () finished) 60))
      (let ((requests (org-agent-test-server-requests)))
        (should (= (length requests) 2))
        (dolist (body requests)
          (let ((text (json-encode body)))
            (should-not (string-match-p org-agent-paths-test--secret text))
            (should-not (string-match-p "diary" text))
            (should-not (string-match-p "vault" text))))
        (let ((results (org-agent-paths-test--tool-messages (nth 1 requests))))
          (should (= (length results) 6))
          ;; Refused as an unknown node is, naming nothing.
          (should (string-match-p "no node the agent may see has that id" (nth 0 results)))
          (should (string-match-p "^No headlines mention it" (nth 1 results)))
          (should-not (string-match-p (regexp-quote secret-id) (nth 0 results)))
          (should (string-match-p "Buy stamps" (nth 2 results)))
          (should (string-match-p "private\\|outside the directories" (nth 3 results)))
          (should (string-match-p "hidden" (nth 4 results)))
          (should-not (string-match-p "innocent" (nth 5 results))))))))

(ert-deftest org-agent-paths-an-edit-through-a-link-is-judged-by-the-real-file ()
  "An edit through a link out of the directories never writes; one inside names the file."
  (org-agent-paths-test--with-notes
    (let* ((link (expand-file-name "link.org" notes))
           (alias (expand-file-name "alias.org" notes))
           (target (expand-file-name "target.org" outside))
           (add-to-link (list :type :request :target :emacs :action :add-headline
                              :file link :title "Transfer the money")))
      (org-agent--send-privacy)
      ;; The module refuses it by rule, naming neither file.
      (let ((refusal (org-agent--edit-refusal add-to-link)))
        (should (string-match-p "outside the directories" refusal))
        (should-not (string-match-p "target\\|link\\.org" refusal)))
      (should-not (org-agent--edit-refusal
                   (list :type :request :target :emacs :action :add-headline
                         :file alias :title "Fine")))
      ;; The preview through a link inside the directories names the real file.
      (let ((diff (plist-get (org-agent-actuator-preview
                              (list :type :request :target :emacs :action :add-headline
                                    :file alias :title "Through the alias"))
                             :diff)))
        (should (string-match-p
                 (regexp-quote (format "%s → %s" alias (expand-file-name "plain.org" notes)))
                 diff)))
      ;; A scripted model proposes the edit through the link out; nothing is written.
      (org-agent-test-server-push
       :text "" :calls `[("add_headline" ((file . ,link) (title . "Transfer the money")))
                         ("set_todo" ((id . ,(org-agent-paths-test--id "Outside task"))
                                      (state . "DONE")))])
      (org-agent-test-server-push :text "Could not.")
      (org-agent-paths-test--send "Pay the bill.")
      (should (org-agent-test-wait (lambda () finished) 60))
      (should (equal (with-temp-buffer (insert-file-contents target) (buffer-string))
                     "* TODO Outside task\n"))
      (let ((results (org-agent-paths-test--tool-messages
                      (nth 1 (org-agent-test-server-requests)))))
        (should (= (length results) 2))
        (dolist (r results)
          (should (string-match-p "outside the directories" r))
          (should-not (string-match-p "target\\.org" r)))))))

(provide 'org-agent-paths-test)
;;; org-agent-paths-test.el ends here
