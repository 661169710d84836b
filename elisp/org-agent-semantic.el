;;; org-agent-semantic.el --- Notes searchable by meaning -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;;; Commentary:

;; Embeddings of the notes and search by meaning.  The module embeds
;; headlines through an embedding server (OpenAI-compatible
;; /v1/embeddings, Ollama /api/embed or Gemini), keyed by their text so
;; unchanged notes are never embedded twice, keeps the vectors beside
;; the store, and searches them on its worker threads.  Which headlines:
;; those with a property EMBED of t, or all of them with
;; `org-agent-embed-all'; never a private one.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org-agent-backends)
(org-agent--declare-module-functions)

;;;; Options

(defcustom org-agent-embedding-backend nil
  "The embedding server, a plist, or nil for no semantic search.
Like (:type openai :url \"http://127.0.0.1:8080/v1\" :model \"all-minilm\"):
:type is `openai' (any /v1/embeddings server), `ollama' (:url
\"http://127.0.0.1:11434\") or `gemini' (:url
\"https://generativelanguage.googleapis.com/v1beta\").  Optional: :key
\(a string or a function; by default `auth-source' for the URL's host),
:headers, :encoding (`float' or `base64') and timeouts in seconds
\(:connect-timeout, :first-byte-timeout, :idle-timeout, :total-timeout).
When set, the chat shows notes related by meaning to each question
and the agent can search by meaning."
  :type '(choice (const :tag "None" nil) (plist :key-type symbol :value-type sexp))
  :group 'org-agent-semantic)

(defcustom org-agent-embed-all nil
  "Whether every headline is embedded, not only those with EMBED t."
  :type 'boolean
  :group 'org-agent-semantic)

(defcustom org-agent-related-threshold 0.75
  "How similar a note must be to a question to be shown with it (0 to 1)."
  :type 'number
  :group 'org-agent-semantic)

(defcustom org-agent-embed-idle-delay 5
  "Seconds of idle time after an ingest before new notes are embedded."
  :type 'number
  :group 'org-agent-semantic)

(declare-function org-agent--visit "org-agent" (file position))

;;;; Embedding

(defun org-agent-semantic-backend ()
  "The embedding backend plist with its key resolved, or nil."
  (when org-agent-embedding-backend
    (plist-put (copy-sequence org-agent-embedding-backend) :key
               (org-agent--backend-key org-agent-embedding-backend))))

(defvar org-agent-semantic--running nil
  "Non-nil while an embedding update runs.")

(defvar org-agent-semantic--timer nil
  "The idle timer of the next embedding update.")

;;;###autoload
(defun org-agent-embed-notes (&optional callback)
  "Embed the notes that are new or changed; report when done.
The notes are the headlines with the property EMBED t, or all of
them with `org-agent-embed-all'; never a private one.  CALLBACK, if
given, is called with the final event plist."
  (interactive)
  (org-agent--require-started)
  (let ((backend (or (org-agent-semantic-backend)
                     (user-error "Set `org-agent-embedding-backend' first")))
        (by-user (called-interactively-p 'interactive)))
    (if org-agent-semantic--running
        (when by-user
          (message "org-agent: the notes are being embedded already"))
      (org-agent--send-privacy)
      (let ((request (org-agent--embed backend org-agent-embed-all)))
        ;; Only once the module took the job: a refused one must not block the next.
        (setq org-agent-semantic--running t)
        (puthash request
                 (lambda (event)
                   (setq org-agent-semantic--running nil)
                   (pcase (plist-get event :type)
                     ('embedded
                      (when (or callback by-user (> (plist-get event :embedded) 0))
                        (message "org-agent: %s" (org-agent-semantic--report event))))
                     (_ (message "org-agent: %s" (plist-get event :message))))
                   (when callback (funcall callback event)))
                 org-agent--callbacks)
        request))))

(defun org-agent-semantic--report (event)
  "Return what the `embedded' EVENT of an embedding run means for the user."
  (cond
   ((zerop (plist-get event :candidates))
    (format "nothing to embed: %s" (org-agent-semantic--why-nothing)))
   ((and (zerop (plist-get event :embedded)) (zerop (plist-get event :dropped))
         (zerop (plist-get event :refused)))
    (format "nothing new to embed; %d in the index" (plist-get event :indexed)))
   (t
    (format "%d notes embedded, %d dropped%s; %d in the index"
            (plist-get event :embedded) (plist-get event :dropped)
            (if (> (plist-get event :refused) 0)
                (format ", %d refused by the server" (plist-get event :refused))
              "")
            (plist-get event :indexed)))))

(defun org-agent-semantic--marked-count ()
  "How many headlines of the store are marked for embedding (EMBED t)."
  (org-agent-count :type 'headline :property '("EMBED" . "t")))

(defun org-agent-semantic--anything-to-embed-p ()
  "Whether the store has headlines to embed, private ones aside.
Stops at the first: cheap when there are some."
  (apply #'org-agent-query :type 'headline :limit 1 :fields '(:id)
         (unless org-agent-embed-all (list :property '("EMBED" . "t")))))

(defun org-agent-semantic--headlines (n)
  "N headlines, in words: \"1 headline\", \"2 headlines\"."
  (format "%d headline%s" n (if (= n 1) "" "s")))

(defun org-agent-semantic--why-nothing ()
  "Why no headline is to be embedded, and what to do about it."
  (let ((headlines (org-agent-count :type 'headline))
        (marked (if org-agent-embed-all 0 (org-agent-semantic--marked-count))))
    (cond
     ((zerop headlines)
      "the store has no headlines yet (set `org-agent-directories' and turn on \
`org-agent-mode', or M-x org-agent-ingest-directory)")
     ((and (not org-agent-embed-all) (zerop marked))
      (format "none of the %s is marked for it.  Give the headlines to search by \
meaning the property EMBED with the value t (C-c C-x p EMBED RET t RET), or set \
`org-agent-embed-all' to embed every headline"
              (org-agent-semantic--headlines headlines)))
     (t
      (format "%s %s private, and private notes are never embedded (see \
`org-agent-private-tags' and `org-agent-private-files')"
              (if org-agent-embed-all
                  (format "all %s of the store" (org-agent-semantic--headlines headlines))
                (format "the %s marked EMBED t" (org-agent-semantic--headlines marked)))
              (if (= (if org-agent-embed-all headlines marked) 1) "is" "are"))))))

(defun org-agent-semantic--after-ingest (event)
  "Embed new notes a little after EVENT, an ingest that changed something."
  (when (and org-agent-embedding-backend
             (eq (plist-get event :type) 'ingested)
             (plist-get event :changed))
    (when (timerp org-agent-semantic--timer)
      (cancel-timer org-agent-semantic--timer))
    (setq org-agent-semantic--timer
          (run-with-idle-timer org-agent-embed-idle-delay nil
                               (lambda ()
                                 (setq org-agent-semantic--timer nil)
                                 (condition-case err
                                     (org-agent-embed-notes)
                                   (error (message "org-agent: embedding: %s"
                                                   (error-message-string err)))))))))

(add-hook 'org-agent-ingest-functions #'org-agent-semantic--after-ingest)

;;;; Search

(defconst org-agent-semantic--empty-index-error "no note is embedded yet"
  "How the module's search error starts when the vector index is empty.")

(defun org-agent-semantic--search-failed (message)
  "What to tell the user when a search failed with MESSAGE."
  (cond
   ((not (string-prefix-p org-agent-semantic--empty-index-error message))
    message)
   (org-agent-semantic--running
    "the notes are being embedded right now; search again when that is done")
   (t
    (format "%s, but none is embedded yet: M-x org-agent-embed-notes embeds them \
\(then new and changed notes are embedded on their own after each save)"
            (if org-agent-embed-all
                (format "the store has %s"
                        (org-agent-semantic--headlines (org-agent-count :type 'headline)))
              (format "%s marked EMBED t"
                      (org-agent-semantic--headlines (org-agent-semantic--marked-count))))))))

(defvar org-agent-semantic-results-buffer "*org-agent-search*"
  "The buffer that shows the results of a semantic search.")

(defun org-agent-semantic--show (query hits)
  "Show HITS, a list of (ID . SIMILARITY), found for QUERY."
  (with-current-buffer (get-buffer-create org-agent-semantic-results-buffer)
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (format "Notes closest in meaning to: %s\n\n" query))
      (if (null hits)
          (insert "Nothing found.\n")
        (dolist (hit hits)
          (let* ((node (org-agent-node (car hit)))
                 (file (plist-get node :file))
                 (begin (plist-get node :begin)))
            (when node
              (insert (format "%.2f  " (cdr hit)))
              (insert-text-button
               (mapconcat #'identity
                          (append (org-agent-outline-path (car hit))
                                  (list (plist-get node :title)))
                          " / ")
               'action (lambda (_) (org-agent--visit file begin))
               'follow-link t)
              (insert (format "  (%s)\n" (file-name-nondirectory file)))))))
      (goto-char (point-min))
      (special-mode))
    (display-buffer (current-buffer))))

;;;###autoload
(defun org-agent-semantic-search (query)
  "Find the notes closest in meaning to QUERY; show them in a buffer.
Each result opens its headline.  Needs `org-agent-embedding-backend',
and notes to search: headlines with the property EMBED t, or all of
them with `org-agent-embed-all' (see `org-agent-embed-notes')."
  (interactive (list (read-string "Search notes by meaning: ")))
  (org-agent--require-started)
  (when (string-empty-p (string-trim query))
    (user-error "Nothing to search for"))
  (let ((backend (or (org-agent-semantic-backend)
                     (user-error "Set `org-agent-embedding-backend' first"))))
    (unless (org-agent-semantic--anything-to-embed-p)
      (user-error "Nothing to search by meaning: %s" (org-agent-semantic--why-nothing)))
    (org-agent--send-privacy)
    (puthash (org-agent--semantic-search backend query 20)
             (lambda (event)
               (if (eq (plist-get event :type) 'search-results)
                   (org-agent-semantic--show query (plist-get event :hits))
                 (message "org-agent: %s"
                          (org-agent-semantic--search-failed (plist-get event :message)))))
             org-agent--callbacks)
    (message "org-agent: searching...")))

(provide 'org-agent-semantic)
;;; org-agent-semantic.el ends here
