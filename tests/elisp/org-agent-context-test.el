;;; org-agent-context-test.el --- Context the user adds, as the notes show it -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server: a region, a buffer, a file and a note added to the context
;; reach the request in marked blocks, with what `read_node' would
;; hide hidden (private subtrees, private files and notes, withheld
;; properties, secrets); what is left out is said in the chat; the
;; list shows and removes items; the preview shows them.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-context)
(require 'org-agent-test-server)
(require 'cl-lib)

(defconst org-agent-context-test--note
  "#+TITLE: Router
* Setup
The router sits in the hall.  CONTEXT-MARK-SETUP
:PROPERTIES:
:PASSWORD: correct horse battery
:END:
* Diary                                                            :private:
CONTEXT-MARK-PRIVATE
* Access
Token ghp_R8x2Kq9LmZ4vT7nW1pY6sD3fH5jB0cX8aE2u for the CI.
"
  "A note with a private subtree, a withheld property and a secret.")

(defun org-agent-context-test--system ()
  "The system text of the last request the test server received."
  (let ((request (car (last (org-agent-test-server-requests)))))
    (mapconcat (lambda (m) (format "%s" (alist-get "content" m nil nil #'equal)))
               (seq-filter (lambda (m) (equal (alist-get "role" m nil nil #'equal) "system"))
                           (alist-get "messages" request nil nil #'equal))
               "\n")))

(defmacro org-agent-context-test--with-chat (&rest body)
  "Run BODY in a fresh chat against the test server, with a notes directory.
`dir' is the directory, `note' the router note's file in it."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((dir (make-temp-file "org-agent-context" t))
        (note (expand-file-name "router.org" dir))
        (org-agent-context-items nil))
     (unwind-protect
         (progn
           (with-temp-file note (insert org-agent-context-test--note))
           (org-agent-ingest-file note)
           (org-agent-test-wait (lambda () (org-agent-query :file note)) 10)
           (org-agent-test-kill-chat)
           ,@body)
       (org-agent-interrupt)
       (org-agent-test-wait (lambda () (not (org-agent-busy-p))) 10)
       (org-agent-context-clear)
       (org-agent-test-kill-file-buffers dir)
       (delete-directory dir t))))

(defun org-agent-context-test--turn (send finished-fn)
  "Send a message with SEND in the chat; wait until FINISHED-FN says the turn ended."
  (org-agent-test-server-push :text "Noted.")
  (with-current-buffer (org-agent-chat)
    (funcall send "What about the router?"))
  (should (org-agent-test-wait finished-fn 30)))

(ert-deftest org-agent-context-a-buffer-goes-as-the-notes-show-it ()
  "An added note buffer reaches the model without its private parts or secrets."
  (org-agent-context-test--with-chat
    (with-current-buffer (find-file-noselect note)
      (org-agent-context-add))
    (org-agent-context-test--turn send (lambda () finished))
    (let ((system (org-agent-context-test--system)))
      (should (string-match-p "The user added these to the conversation's context" system))
      (should (string-match-p "added=\"[^\"]*router.org\">>" system))
      (should (string-match-p "CONTEXT-MARK-SETUP" system))
      (should-not (string-match-p "CONTEXT-MARK-PRIVATE" system))
      (should-not (string-match-p "correct horse" system))
      (should-not (string-match-p "ghp_R8x2Kq9" system)))))

(ert-deftest org-agent-context-a-region-is-read-when-the-turn-is-sent ()
  "A region is a reference: its text at send time goes, and nothing around it."
  (org-agent-context-test--with-chat
    (with-current-buffer (find-file-noselect note)
      (goto-char (point-min))
      (re-search-forward "^\\* Setup")
      (set-mark (line-beginning-position))
      (forward-line 2)
      (activate-mark)
      (org-agent-context-add)
      ;; Typed inside the region after it was added.
      (goto-char (point-min))
      (re-search-forward "sits in the hall")
      (insert " REGION-EDITED"))
    (org-agent-context-test--turn send (lambda () finished))
    (let ((system (org-agent-context-test--system)))
      (should (string-match-p "REGION-EDITED" system))
      (should (string-match-p "added=\"lines 2-4 of [^\"]*router.org\"" system))
      (should-not (string-match-p "Token ghp" system)))))

(ert-deftest org-agent-context-private-things-are-left-out-and-said-to-be ()
  "A private file and a private note are left out; the chat says so, the model sees neither."
  (org-agent-context-test--with-chat
    (let* ((secret-file (expand-file-name "diary.org" dir))
           (org-agent-private-files (list "diary.org"))
           (private-id (org-agent-node-get
                        (seq-find (lambda (n) (equal (org-agent-node-get n :title) "Diary"))
                                  (org-agent-query :file note))
                        :id)))
      (should private-id)
      (with-temp-file secret-file (insert "* Dear diary\nDIARY-MARK\n"))
      (org-agent-context-add-file secret-file)
      (org-agent-context--add (list :kind 'note :id private-id :title "Diary"))
      (org-agent-context-test--turn send (lambda () finished))
      (let ((system (org-agent-context-test--system)))
        (should-not (string-match-p "DIARY-MARK" system))
        (should-not (string-match-p "CONTEXT-MARK-PRIVATE" system)))
      (with-current-buffer (org-agent-chat)
        (should (string-match-p "diary.org is private" (buffer-string)))
        (should (string-match-p "the note Diary: no such note" (buffer-string)))))))

(ert-deftest org-agent-context-a-note-and-a-plain-buffer ()
  "A note added by id goes as `read_node' shows it; a buffer with no file goes too."
  (org-agent-context-test--with-chat
    (let ((id (org-agent-node-get
               (seq-find (lambda (n) (equal (org-agent-node-get n :title) "Setup"))
                         (org-agent-query :file note))
               :id)))
      (org-agent-context--add (list :kind 'note :id id :title "Setup"))
      (with-temp-buffer
        (rename-buffer "*scratch notes*" t)
        (insert "PLAIN-BUFFER-MARK")
        (org-agent-context-add)
        (org-agent-context-test--turn send (lambda () finished))
        (let ((system (org-agent-context-test--system)))
          (should (string-match-p "added=\"the note Setup\">>\n[^<]*CONTEXT-MARK-SETUP" system))
          (should (string-match-p "added=\"the buffer \\*scratch notes\\*[^\"]*\">>\nPLAIN-BUFFER-MARK"
                                  system))
          (should-not (string-match-p "correct horse" system)))))))

(ert-deftest org-agent-context-the-list-shows-and-removes ()
  "`org-agent-context' lists the items; d removes one; D removes all."
  (org-agent-context-test--with-chat
    (with-current-buffer (find-file-noselect note) (org-agent-context-add))
    (org-agent-context-add-file note)
    (org-agent-context-add-file note)
    (should (= (length org-agent-context-items) 2))
    (save-window-excursion (org-agent-context))
    (with-current-buffer org-agent-context-list-buffer
      (goto-char (point-min))
      (should (string-match-p "buffer .*router.org" (buffer-string)))
      (should (string-match-p "file .*router.org" (buffer-string)))
      (org-agent-context-remove-at-point)
      (should (= (length org-agent-context-items) 1))
      (should (= (count-lines (point-min) (point-max)) 1))
      (org-agent-context-clear)
      (should (null org-agent-context-items)))))

(ert-deftest org-agent-context-an-image-goes-only-to-a-model-that-sees ()
  "An image link added in Org goes as an image to a :vision backend; otherwise the chat says why not."
  (org-agent-context-test--with-chat
    (let ((image (expand-file-name "square.png" dir))
          (private (expand-file-name "diary.png" dir))
          (org-agent-private-files (list "diary.png")))
      (with-temp-file image
        (set-buffer-multibyte nil)
        (insert "\x89PNG\r\n\x1a\nIMAGE-BYTES"))
      (with-temp-file private (insert "PRIVATE-IMAGE"))
      (with-temp-buffer
        (insert "* Look\n[[file:" image "]]\n")
        (org-mode)
        (search-backward "file:")
        (org-agent-context-add))
      (org-agent-context-add-file private)
      (should (equal (mapcar (lambda (i) (plist-get i :kind)) org-agent-context-items)
                     '(image image)))
      ;; Not marked as seeing: left out, and said to be.
      (org-agent-context-test--turn send (lambda () finished))
      (should-not (string-search "iVBORw0KGgo" (json-encode (car (last (org-agent-test-server-requests))))))
      (with-current-buffer (org-agent-chat)
        (should (string-search "is not marked as seeing images" (buffer-string))))
      ;; Marked: the image goes, base64 in the user message; the private one never.
      (setq finished nil)
      (let ((org-agent-backends (list (plist-put (copy-sequence (car org-agent-backends))
                                                 :vision t))))
        (org-agent-context-test--turn send (lambda () finished)))
      (let ((sent (json-encode (car (last (org-agent-test-server-requests))))))
        (should (string-search (base64-encode-string "\x89PNG\r\n\x1a\nIMAGE-BYTES" t) sent))
        (should (string-search "data:image/png;base64," sent))
        (should-not (string-search (base64-encode-string "PRIVATE-IMAGE" t) sent)))
      (with-current-buffer (org-agent-chat)
        (should (string-search "diary.png is private or protected" (buffer-string)))))))

(ert-deftest org-agent-context-a-screenshot-is-an-image-item ()
  "The screenshot program's picture becomes an image item; a failed one adds nothing."
  (let ((org-agent-context-items nil)
        (org-agent-screenshot-command '("sh" "-c" "printf 'PNG-SHOT' > %f")))
    (org-agent-context-add-screenshot)
    (let ((item (car org-agent-context-items)))
      (should (eq (plist-get item :kind) 'image))
      (should (string-suffix-p ".png" (plist-get item :file)))
      (should (equal (with-temp-buffer (insert-file-contents (plist-get item :file))
                                       (buffer-string))
                     "PNG-SHOT"))
      (delete-file (plist-get item :file))))
  (let ((org-agent-context-items nil)
        (org-agent-screenshot-command '("false" "%f")))
    (should-error (org-agent-context-add-screenshot) :type 'user-error)
    (should-not org-agent-context-items)))

(provide 'org-agent-context-test)
;;; org-agent-context-test.el ends here
