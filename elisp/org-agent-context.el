;;; org-agent-context.el --- What you add to the conversation's context -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Besides the notes the agent finds itself, you may add to the
;; context of the next turns a region, a buffer, a file or a note:
;; `org-agent-context-add' (the region, else the buffer),
;; `org-agent-context-add-file', `org-agent-context-add-note'.
;; `org-agent-context' lists them (d removes one, RET visits it, D
;; removes all); `org-agent-context-preview' shows them in the request.
;;
;; Items are references: their text is read when a turn is sent, so
;; it is the text of that moment.  The module shows each as the notes
;; layer shows any text: a private note is left out as an unknown one,
;; a private file or subtree is cut, secrets are replaced; text from
;; outside the notes is untrusted, so an edit after reading it asks.
;; What is left out is said in the chat.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'subr-x)
(require 'seq)
(require 'org-element)
(org-agent--declare-module-functions)

(defvar org-agent-context-items nil
  "What the user added to the context of the next turns, newest first.
Each a plist: (:kind region :buffer B :start M :end M), (:kind buffer
:buffer B), (:kind file :file F), (:kind note :id ID :title T) or
\(:kind text :label L :text T), text from elsewhere (an MCP resource).")

(defcustom org-agent-context-max-file-bytes (* 2 1024 1024)
  "Largest file `org-agent-context-add-file' adds, in bytes.
Within a request, added items share a budget as large as the notes'
\(`org-agent-context-budget'); what does not fit is cut, saying so."
  :type 'integer
  :group 'org-agent-chat)

(defun org-agent-context--label (item)
  "A short description of ITEM for lists and for the model."
  (pcase (plist-get item :kind)
    ('region
     (let ((buffer (plist-get item :buffer)))
       (if (buffer-live-p buffer)
           (with-current-buffer buffer
             (format "lines %d-%d of %s"
                     (line-number-at-pos (plist-get item :start) t)
                     (line-number-at-pos (plist-get item :end) t)
                     (org-agent-context--buffer-label buffer)))
         "a region of a killed buffer")))
    ('buffer (org-agent-context--buffer-label (plist-get item :buffer)))
    ('file (abbreviate-file-name (plist-get item :file)))
    ('image (format "the image %s" (abbreviate-file-name (plist-get item :file))))
    ('note (format "the note %s" (or (plist-get item :title) (plist-get item :id))))
    ('text (plist-get item :label))))

(defun org-agent-context--buffer-label (buffer)
  "BUFFER's file name, else its name."
  (if (buffer-live-p buffer)
      (or (and (buffer-file-name buffer) (abbreviate-file-name (buffer-file-name buffer)))
          (format "the buffer %s" (buffer-name buffer)))
    "a killed buffer"))

(defun org-agent-context--add (item)
  "Add ITEM unless an equal one is there; say how many items there are."
  (unless (seq-find (lambda (other) (org-agent-context--same-p item other))
                    org-agent-context-items)
    (push item org-agent-context-items))
  (message "org-agent: added %s to the context (%d item%s; M-x org-agent-context lists them)"
           (org-agent-context--label item) (length org-agent-context-items)
           (if (cdr org-agent-context-items) "s" "")))

(defun org-agent-context--same-p (a b)
  "Whether items A and B name the same text."
  (and (eq (plist-get a :kind) (plist-get b :kind))
       (pcase (plist-get a :kind)
         ('region (and (eq (plist-get a :buffer) (plist-get b :buffer))
                       (equal (marker-position (plist-get a :start))
                              (marker-position (plist-get b :start)))
                       (equal (marker-position (plist-get a :end))
                              (marker-position (plist-get b :end)))))
         ('buffer (eq (plist-get a :buffer) (plist-get b :buffer)))
         ((or 'file 'image) (equal (plist-get a :file) (plist-get b :file)))
         ('note (equal (plist-get a :id) (plist-get b :id)))
         ('text (equal (plist-get a :label) (plist-get b :label))))))

(defun org-agent-context-add-text (label text)
  "Add TEXT, described as LABEL, to the context of what you ask next.
For text from outside Emacs's buffers and files (an MCP server's
resource): it counts as untrusted, as any text that is not a note."
  (org-agent-context--add (list :kind 'text :label label :text text)))

;;;###autoload
(defun org-agent-context-add ()
  "Add the region to the context of what you ask next, else the whole buffer.
On an Org link to an image, with no region, the image is added (see
`org-agent-context-add-file').  Text is read when each turn is sent."
  (interactive)
  (org-agent-context--add
   (cond
    ((use-region-p)
     (let ((start (copy-marker (region-beginning)))
           (end (copy-marker (region-end) t)))
       (deactivate-mark)
       (list :kind 'region :buffer (current-buffer) :start start :end end)))
    ((org-agent-context--image-link-at-point)
     (list :kind 'image :file (org-agent-context--image-link-at-point)))
    (t (list :kind 'buffer :buffer (current-buffer))))))

(defconst org-agent-context--image-regexp "\\.\\(?:png\\|jpe?g\\|gif\\|webp\\)\\'"
  "File names of the images a model may be sent.")

(defun org-agent-context--image-link-at-point ()
  "The image file an Org file link at point names, expanded, or nil."
  (when (derived-mode-p 'org-mode)
    (let ((context (ignore-errors (org-element-context))))
      (when (and (eq (org-element-type context) 'link)
                 (member (org-element-property :type context) '("file" "attachment"))
                 (string-match-p org-agent-context--image-regexp
                                 (downcase (org-element-property :path context))))
        (expand-file-name (org-element-property :path context))))))

;;;###autoload
(defun org-agent-context-add-file (file)
  "Add FILE to the context of what you ask next.
Its text is read each time a message is sent.  An image (PNG, JPEG,
GIF, WebP) goes as an image, to a backend with :vision t."
  (interactive "fAdd file to the context: ")
  (let ((file (expand-file-name file)))
    (unless (file-readable-p file)
      (user-error "Cannot read %s" file))
    (when (file-directory-p file)
      (user-error "%s is a directory; add its files one by one" file))
    (when (> (file-attribute-size (file-attributes file)) org-agent-context-max-file-bytes)
      (user-error "%s is larger than `org-agent-context-max-file-bytes'" file))
    (org-agent-context--add
     (list :kind (if (string-match-p org-agent-context--image-regexp (downcase file))
                     'image
                   'file)
           :file file))))

(defcustom org-agent-screenshot-command
  (cond ((executable-find "grim") (and (executable-find "slurp") '("sh" "-c" "grim -g \"$(slurp)\" %f")))
        ((executable-find "maim") '("maim" "-s" "%f"))
        ((executable-find "scrot") '("scrot" "-s" "-o" "%f"))
        ((executable-find "import") '("import" "%f")))
  "The program that lets you pick a region of the screen and saves it as a PNG.
A list: the program and its arguments, %f standing for the file to
write.  nil: `org-agent-context-add-screenshot' exports the selected
Emacs frame instead, where Emacs can (`x-export-frames', a Cairo
build)."
  :type '(choice (const :tag "The Emacs frame" nil) (repeat string))
  :group 'org-agent-chat)

(declare-function x-export-frames "xfns.c" (&optional frames type))

;;;###autoload
(defun org-agent-context-add-screenshot ()
  "Add a screenshot to the context of what you ask next, as an image.
You pick a region with `org-agent-screenshot-command'; without one, the
selected Emacs frame is taken.  It goes to a backend with :vision t."
  (interactive)
  (let ((file (make-temp-file "org-agent-screenshot-" nil ".png")))
    (cond
     (org-agent-screenshot-command
      (let* ((argv (mapcar (lambda (a) (string-replace "%f" file a))
                           org-agent-screenshot-command))
             (status (apply #'call-process (car argv) nil nil nil (cdr argv))))
        (unless (and (eq status 0) (> (file-attribute-size (file-attributes file)) 0))
          (delete-file file)
          (user-error "The screenshot was not taken (%s exited with %s)" (car argv) status))))
     ((and (fboundp 'x-export-frames) (display-graphic-p))
      (let ((coding-system-for-write 'binary))
        (write-region (x-export-frames nil 'png) nil file nil 'silent)))
     (t (delete-file file)
        (user-error "No way to take a screenshot: set `org-agent-screenshot-command'")))
    (org-agent-context--add (list :kind 'image :file file))))

;;;###autoload
(defun org-agent-context-add-note ()
  "Add a note of the store, chosen by outline path, to the context."
  (interactive)
  (org-agent--require-started)
  (pcase-let* ((`(,file ,pos) (org-agent--read-headline "Add note to the context: "))
               (node (org-agent--node-at file pos)))
    (unless node
      (user-error "No note at %s:%s in the store now" file pos))
    (org-agent-context--add (list :kind 'note :id (org-agent-node-get node :id)
                                  :title (org-agent-node-get node :title)))))

(defun org-agent-context-remove (item)
  "Remove ITEM from the context."
  (setq org-agent-context-items (delq item org-agent-context-items))
  (dolist (key '(:start :end))
    (when (markerp (plist-get item key))
      (set-marker (plist-get item key) nil))))

;;;###autoload
(defun org-agent-context-clear ()
  "Remove everything added to the context."
  (interactive)
  (mapc #'org-agent-context-remove (copy-sequence org-agent-context-items))
  (org-agent-context--refresh-list)
  (message "org-agent: the context holds nothing added"))

;;;; What a turn sends

(defun org-agent-context--text (item)
  "ITEM's text now and the file it is from: (TEXT . FILE), or nil if it is gone."
  (pcase (plist-get item :kind)
    ('region
     (let ((buffer (plist-get item :buffer)))
       (and (buffer-live-p buffer)
            (with-current-buffer buffer
              (cons (buffer-substring-no-properties (plist-get item :start) (plist-get item :end))
                    (and buffer-file-name (expand-file-name buffer-file-name)))))))
    ('buffer
     (let ((buffer (plist-get item :buffer)))
       (and (buffer-live-p buffer)
            (with-current-buffer buffer
              (save-restriction
                (widen)
                (cons (buffer-substring-no-properties (point-min) (point-max))
                      (and buffer-file-name (expand-file-name buffer-file-name))))))))
    ('text (cons (plist-get item :text) nil))
    ('file
     (let ((file (plist-get item :file)))
       (and (file-readable-p file)
            (with-temp-buffer
              (insert-file-contents file)
              (cons (buffer-string) file)))))))

(defun org-agent-context-options ()
  "Return the turn option with the added items: (:context-items ITEMS).
nil when nothing is added.  A killed buffer or a vanished file is
left out, and said to be."
  (when org-agent-context-items
    (let (items)
      (dolist (item (reverse org-agent-context-items))
        (let ((label (org-agent-context--label item)))
          (pcase (plist-get item :kind)
            ('note (push (list :label label :id (plist-get item :id)) items))
            ('image (push (list :label label :image (plist-get item :file)) items))
            (_
             (pcase (org-agent-context--text item)
               (`(,text . ,file)
                (push (append (list :label label :text text) (and file (list :file file)))
                      items))
               (_ (message "org-agent: %s is gone; left out of the context" label)))))))
      (list :context-items (nreverse items)))))

;;;; The list

(defvar org-agent-context-list-buffer "*org-agent-context-items*"
  "The buffer `org-agent-context' lists the added items in.")

(defvar org-agent-context-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "d" #'org-agent-context-remove-at-point)
    (define-key map "D" #'org-agent-context-clear)
    (define-key map (kbd "RET") #'org-agent-context-visit)
    (define-key map "g" #'revert-buffer)
    map)
  "Keymap of `org-agent-context-mode'.")

(define-derived-mode org-agent-context-mode tabulated-list-mode "Agent-Context"
  "The items added to the context of the next turns.
\\{org-agent-context-mode-map}"
  :interactive nil
  (setq tabulated-list-format [("Kind" 8 t) ("Item" 60 t)]
        tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'org-agent-context--fill nil t)
  (tabulated-list-init-header))

(defun org-agent-context--fill ()
  "Fill the list with the added items."
  (setq tabulated-list-entries
        (mapcar (lambda (item)
                  (list item (vector (symbol-name (plist-get item :kind))
                                     (org-agent-context--label item))))
                (reverse org-agent-context-items))))

(defun org-agent-context--refresh-list ()
  "Refresh the list of items, if it is shown."
  (when-let ((buffer (get-buffer org-agent-context-list-buffer)))
    (with-current-buffer buffer
      (org-agent-context--fill)
      (tabulated-list-print t))))

;;;###autoload
(defun org-agent-context ()
  "List what is added to the context of what you ask next."
  (interactive)
  (with-current-buffer (get-buffer-create org-agent-context-list-buffer)
    (org-agent-context-mode)
    (org-agent-context--fill)
    (tabulated-list-print)
    (pop-to-buffer (current-buffer))))

(defun org-agent-context-remove-at-point ()
  "Remove the item at point from the context."
  (interactive nil org-agent-context-mode)
  (let ((item (or (tabulated-list-get-id) (user-error "No item here"))))
    (org-agent-context-remove item)
    (org-agent-context--refresh-list)))

(defun org-agent-context-visit ()
  "Show the item at point where it is."
  (interactive nil org-agent-context-mode)
  (let ((item (or (tabulated-list-get-id) (user-error "No item here"))))
    (pcase (plist-get item :kind)
      ('region (pop-to-buffer (plist-get item :buffer))
               (goto-char (plist-get item :start)))
      ('buffer (pop-to-buffer (plist-get item :buffer)))
      ((or 'file 'image) (find-file-other-window (plist-get item :file)))
      ('note (let ((node (org-agent-node (plist-get item :id))))
               (unless node (user-error "The note is no longer in the store"))
               (find-file-other-window (org-agent-node-get node :file))
               (goto-char (org-agent-node-get node :begin))))
      ('text (with-help-window "*org-agent-context text*"
               (princ (plist-get item :text)))))))

(provide 'org-agent-context)
;;; org-agent-context.el ends here
