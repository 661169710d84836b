;;; org-agent-sentinel-test.el --- Moving a credential into auth-source -*- lexical-binding: t; -*-

;;; Commentary:

;; The secret-sentinel skill's move, on real files: the detector's
;; spans as Emacs reads them, the credential written to a netrc file
;; through auth-source and read back, the note left with a pointer as
;; one undo step, and nothing of the secret in what the model is told.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-sentinel)

(defconst org-agent-sentinel-test-token "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
  "A token the detector knows (github-token), not a real one.")

(defmacro org-agent-sentinel-test-with-note (text &rest body)
  "Run BODY with a fresh store, a note holding TEXT, and an empty netrc file.
`note' is bound to the note's file, `netrc' to the auth-source file."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* ((dir (file-name-as-directory (file-truename (make-temp-file "org-agent-sentinel" t))))
            (org-agent-directories (list dir))
            (note (expand-file-name "keys.org" dir))
            (netrc (expand-file-name "authinfo" dir))
            (auth-sources (list 'password-store netrc))
            (auth-source-netrc-use-gpg-tokens 'never))
       (unwind-protect
           (progn
             (with-temp-file note (insert ,text))
             (org-agent-ingest-file note)
             (auth-source-forget-all-cached)
             ,@body)
         (when-let ((b (get-file-buffer note)))
           (with-current-buffer b (set-buffer-modified-p nil))
           (kill-buffer b))
         (auth-source-forget-all-cached)
         (delete-directory dir t)))))

(defun org-agent-sentinel-test-id (title)
  "The store id of the node titled TITLE."
  (plist-get (seq-find (lambda (n) (equal (plist-get n :title) title))
                       (org-agent-query :type 'headline))
             :id))

(defun org-agent-sentinel-test-text (file)
  "FILE's text on disk, or nil when there is no such file."
  (when (file-exists-p file)
    (with-temp-buffer (insert-file-contents file) (buffer-string))))

(ert-deftest org-agent-sentinel-spans-are-character-offsets ()
  (let* ((text (concat "é café " org-agent-sentinel-test-token "\n:PASSWORD: hunter2\n"))
         (spans (org-agent--secret-spans text)))
    (should (equal (mapcar #'caddr spans) '("github-token" "password-assignment")))
    (should (equal (substring text (nth 0 (car spans)) (nth 1 (car spans)))
                   org-agent-sentinel-test-token))
    (should (equal (substring text (nth 0 (cadr spans)) (nth 1 (cadr spans))) "hunter2"))
    (should-not (org-agent--secret-spans "Call the bank about the password reset."))))

(ert-deftest org-agent-sentinel-move-writes-auth-source-then-the-pointer ()
  (org-agent-sentinel-test-with-note
      (concat "* GitHub\nMy token: " org-agent-sentinel-test-token " for the CI.\n* Other\n")
    (let* ((id (org-agent-sentinel-test-id "GitHub"))
           asked
           (said (cl-letf (((symbol-function 'y-or-n-p)
                            (lambda (prompt) (setq asked prompt) t)))
                   (org-agent-sentinel-move id "api.github.com" "me"))))
      ;; The user saw what moves; neither they nor the model are handed the token in words.
      (should (string-match-p "github-token (40 characters" asked))
      (should-not (string-match-p org-agent-sentinel-test-token said))
      (should (string-match-p "Moved a github-token" said))
      ;; In auth-source, as netrc, and readable back through its API.
      (should (string-match-p (concat "machine api.github.com login me password "
                                      org-agent-sentinel-test-token)
                              (org-agent-sentinel-test-text netrc)))
      (should (equal (funcall (plist-get (car (auth-source-search :host "api.github.com"
                                                                  :user "me" :max 1))
                                         :secret))
                     org-agent-sentinel-test-token))
      ;; Out of the note, on disk too, with a pointer in its place.
      (let ((text (org-agent-sentinel-test-text note)))
        (should-not (string-match-p org-agent-sentinel-test-token text))
        (should (string-match-p
                 "My token: (moved to auth-source: machine api.github.com login me) for the CI."
                 text)))
      ;; One undo step brings it back (in the buffer: the user's to decide).
      (with-current-buffer (get-file-buffer note)
        (undo-boundary)
        (let ((last-command nil)) (undo))
        (should (string-match-p org-agent-sentinel-test-token (buffer-string)))))))

(ert-deftest org-agent-sentinel-move-refuses-without-touching-anything ()
  (org-agent-sentinel-test-with-note
      (concat "* GitHub\n" org-agent-sentinel-test-token "\n* Plain\nNothing secret.\n")
    (let ((id (org-agent-sentinel-test-id "GitHub"))
          (before (org-agent-sentinel-test-text note)))
      ;; The user says no.
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) nil)))
        (should-error (org-agent-sentinel-move id "github.com" "me") :type 'user-error))
      ;; No credential in the note; a host with a space.
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) t)))
        (should-error (org-agent-sentinel-move (org-agent-sentinel-test-id "Plain") "github.com" "me")
                      :type 'user-error)
        (should-error (org-agent-sentinel-move id "git hub" "me") :type 'user-error))
      (should (equal (org-agent-sentinel-test-text note) before))
      (should-not (org-agent-sentinel-test-text netrc))
      ;; auth-source has another secret for that machine and login: never overwritten.
      (with-temp-file netrc (insert "machine github.com login me password other\n"))
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) t)))
        (should-error (org-agent-sentinel-move id "github.com" "me") :type 'user-error))
      (should (equal (org-agent-sentinel-test-text note) before))
      (should (equal (org-agent-sentinel-test-text netrc)
                     "machine github.com login me password other\n")))))

(ert-deftest org-agent-sentinel-move-handles-a-property-and-says-what-remains ()
  (org-agent-sentinel-test-with-note
      (concat "* Wifi\n:PROPERTIES:\n:PASSWORD: hunter2\n:END:\nAlso "
              org-agent-sentinel-test-token "\n")
    (let* ((id (org-agent-sentinel-test-id "Wifi"))
           (said (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) t)))
                   (org-agent-sentinel-move id "router.home" "admin"))))
      (should (string-match-p "password-assignment" said))
      (should (string-match-p "1 more credential in the note" said))
      (should-not (string-match-p "hunter2" said))
      (should (string-match-p ":PASSWORD: (moved to auth-source: machine router.home login admin)"
                              (org-agent-sentinel-test-text note))))))

(ert-deftest org-agent-sentinel-the-skill-brings-the-move-as-a-tool ()
  (let ((tool (gethash "secret-sentinel__move-to-auth-source" org-agent-tools--skill-table)))
    (should tool)
    (should-not (plist-get tool :error))
    (should (equal (mapcar (lambda (a) (plist-get a :name)) (plist-get tool :args))
                   '("node" "host" "login" "port")))))

(provide 'org-agent-sentinel-test)
;;; org-agent-sentinel-test.el ends here
