;;; org-agent-chat.el --- The org-agent chat buffer -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `org-agent-chat' opens an Org buffer in which you talk with the
;; agent.  Type after the last "* You" heading and press C-c C-c: the
;; answer streams in under "* Assistant" while Emacs stays usable; the
;; agent may look things up in your notes with its tools, shown as
;; subtrees.  C-c C-k interrupts.  The turn runs on the module's worker
;; threads; this file only shows what they report.  Which backends
;; answer is org-agent-backends.el's business.

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'org-src)
(require 'subr-x)
(require 'org-agent-store)
(require 'org-agent-actuator)
(require 'org-agent-tools)
(require 'org-agent-backends)
(require 'org-agent-presets)
(require 'org-agent-context)
(require 'org-agent-semantic)
(require 'org-agent-permissions)
(require 'org-agent-skills)
(require 'org-agent-mcp)
(org-agent--declare-module-functions)

;;;; Options

(defcustom org-agent-context-budget nil
  "The most tokens (estimated) the notes in a request may take, or nil.
Nil means a quarter of the first backend's :context-window, or 8000
tokens when it has none.  The node you are on is always shown; the
rest is filled by priority, whole notes only."
  :type '(choice (const :tag "From the backend" nil) natnum)
  :group 'org-agent-chat)

(defcustom org-agent-context-due-days 7
  "Open tasks scheduled or due within this many days are shown to the agent.
Overdue ones too; today's date always goes with them."
  :type 'natnum
  :group 'org-agent-chat)

(defcustom org-agent-context-recent-days 7
  "Tasks closed in this many last days are shown to the agent."
  :type 'natnum
  :group 'org-agent-chat)

(defcustom org-agent-tool-rounds nil
  "How many rounds of tool calls one chat turn may make before it must answer.
After that many steps with tool calls the model is asked without
tools.  nil means no bound but `org-agent-max-depth'; 0 means no tools.
The local model (see `org-agent-local-model') is offered no tools: it
answers from the notes in its context."
  :type '(choice (const :tag "Only the depth limit" nil) natnum)
  :group 'org-agent-chat)

(defcustom org-agent-max-depth 10
  "How many steps (LLM requests) one chat turn may take."
  :type 'natnum
  :group 'org-agent-chat)

(defcustom org-agent-temperature nil
  "Sampling temperature sent with chat requests, or nil for the server's default."
  :type '(choice (const :tag "Server default" nil) number)
  :group 'org-agent-backends)

(defcustom org-agent-chat-buffer-name "*org-agent-chat*"
  "Name of the chat buffer."
  :type 'string
  :group 'org-agent-chat)

(defcustom org-agent-audit-file nil
  "The Org file every gate decision and answer is appended to.
nil means \"audit.org\" in `org-agent-state-directory'."
  :type '(choice (const :tag "audit.org in the state directory" nil) file)
  :group 'org-agent-security)

(defcustom org-agent-summarize-max-chars 60000
  "Most characters of a buffer `org-agent-summarize-buffer' sends."
  :type 'natnum
  :group 'org-agent-chat)

;;;; State

(defvar org-agent-chat-ask-in-batch nil
  "Non-nil means ask the user in batch Emacs too (for tests).
Otherwise, in batch Emacs, any action the gates ask about is denied.")

(defvar org-agent-turn-finished-functions nil
  "Functions called with (CONVERSATION ANSWER) when a chat turn ends.
ANSWER is nil when the turn ended with an error or was interrupted.")

(defvar org-agent-chat--in-flight (make-hash-table)
  "Request id → chat buffer, for the turns running now.")

(defvar-local org-agent-chat--conversation nil
  "The id of this buffer's conversation.")
(defvar-local org-agent-chat--request nil
  "The request id of the turn in flight, or nil.")
(defvar-local org-agent-chat--marker nil
  "Where the next piece of the answer goes.")
(defvar-local org-agent-chat--state "idle"
  "What the chat is doing, for the header line.")
(defvar-local org-agent-chat--tokens 0
  "Tokens used by this conversation.")
(defvar-local org-agent-chat--spent nil
  "What this conversation's requests cost: (COST UNKNOWN ESTIMATED).
COST is the sum in USD of those whose price is known; UNKNOWN is
non-nil when some request's price is unknown; ESTIMATED when some
provider did not count its tokens.  The saved file keeps it (a
#+USAGE: line), so a conversation continued from there goes on.")
(defvar-local org-agent-chat--turn-spent nil
  "What the last turn's requests used: (TOKENS COST UNKNOWN ESTIMATED).
As `org-agent-chat--spent', with the turn's tokens first.")
(defvar-local org-agent-chat--backend-name nil
  "Name and model of the backend in use, for the header line.")
(defvar-local org-agent-chat--step-start nil
  "Where the answer text of the current step began, or nil before it has any.
When its backend fails mid-answer, the text from here on is dropped.")
(defvar org-agent-chat--tool-rounds nil
  "Rounds of tool calls the next turn may make, when a command knows better.
`org-agent-summarize-buffer' sends the text itself and binds it to 0.")
(defcustom org-agent-oversized-message 'ask
  "What to do with a message too large for the model's context window.
A message may take half of the window (the notes and the answer need
the rest), by `org-agent-backends-window'.  `ask' offers the choice;
`trim' sends its beginning, as much as fits; `file' sets the text aside
in a file the model reads in pages with read_file (a model that calls
tools only; else it is trimmed); `refuse' sends nothing.  In batch
Emacs, `ask' refuses."
  :type '(choice (const :tag "Ask" ask) (const :tag "Send it trimmed" trim)
                 (const :tag "As a file read in pages" file)
                 (const :tag "Send nothing" refuse))
  :group 'org-agent-chat)

(defvar org-agent-chat--pasted nil
  "The file (or buffer name) whose text the next message carries, or nil.
`org-agent-summarize-buffer' binds it: the module judges whether that
text is untrusted (not a note, or a note with untrusted nodes), and if
so every edit the conversation proposes from then on asks.")
(defvar org-agent-chat--tier 'cognition
  "The tier of the next request (see `org-agent-model-tiers').
Commands bind it around `org-agent-chat--command'.")
(defvar-local org-agent-chat--reasoning nil
  "Reasoning of the current turn, shown folded when it ends.")
(defvar-local org-agent-chat--focus nil
  "Store id of the node the user was on when they last invoked the agent.")
(defvar-local org-agent-chat--focus-title nil
  "Title of the focus node, for the header line.")
(defvar-local org-agent-chat--after-tool nil
  "Non-nil when the last thing shown was a tool subtree.
More answer text then needs a heading of its own.")
(defvar-local org-agent-chat--turn-start nil
  "When the turn in flight was sent, for the header line.")
(defvar-local org-agent-chat--streamed-chars 0
  "Characters of answer and reasoning the turn in flight has received.")
(defvar-local org-agent-chat--ticker nil
  "The timer refreshing the header line once a second during a turn.")
(defvar-local org-agent-chat--question nil
  "The question waiting for the user: (REPLY MARKER OVERLAY ONCE-ONLY) or nil.
MARKER is where its keys line starts; OVERLAY carries the keys;
ONCE-ONLY is non-nil when it cannot be approved for the conversation
\(a new skill).")

(defun org-agent-chat-answer-marker (&optional buffer)
  "Return the marker where the answer grows in the chat BUFFER, or nil.
BUFFER defaults to the current buffer.  The value is nil unless BUFFER
is an org-agent chat whose answer is being written now."
  (with-current-buffer (or buffer (current-buffer))
    (and (derived-mode-p 'org-agent-chat-mode)
         org-agent-chat--request
         (markerp org-agent-chat--marker)
         (marker-buffer org-agent-chat--marker)
         org-agent-chat--marker)))

;;;; The chat buffer

(defvar org-agent-chat-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'org-agent-chat-send)
    (define-key map (kbd "C-c C-k") #'org-agent-interrupt)
    (define-key map (kbd "C-g") #'org-agent-chat-quit)
    (define-key map (kbd "C-c C-n") #'org-agent-new-chat)
    (define-key map (kbd "C-c C-s") #'org-agent-chat-compact)
    map)
  "Keymap of `org-agent-chat-mode'.")

(define-derived-mode org-agent-chat-mode org-mode "Agent-Chat"
  "Major mode of the org-agent chat buffer.
Type after the last \"* You\" heading; \\[org-agent-chat-send] sends.
While the agent answers, \\[org-agent-chat-quit] or \\[org-agent-interrupt]
interrupts it; otherwise \\[org-agent-chat-quit] is `keyboard-quit'.
\\[org-agent-new-chat] saves this conversation and starts a new one;
\\[universal-argument] \\[org-agent-chat] continues a saved one.  Killing the buffer
\(or Emacs) while a turn runs asks first, then interrupts it.  Long
lines wrap at the window's edge (`visual-line-mode').

\\{org-agent-chat-mode-map}"
  :interactive nil
  (setq header-line-format '(:eval (org-agent-chat--header)))
  (visual-line-mode 1)
  (add-hook 'kill-buffer-query-functions #'org-agent-chat--kill-query nil t)
  (add-hook 'kill-buffer-hook #'org-agent-chat--killed nil t))

(defun org-agent-chat--busy-here ()
  "Whether this chat has a turn in flight, or waits for the local model to start."
  (and (or org-agent-chat--request org-agent-chat--turn-start) t))

(defun org-agent-chat--keys-hint ()
  "Return the keys part of the header line: how to interrupt, or how to send.
Called in the chat buffer, so its keys are the ones it has."
  (substitute-command-keys
   (if (org-agent-chat--busy-here)
       "  \\[org-agent-chat-quit] interrupts"
     "  \\[org-agent-chat-send] sends, \\[org-agent-new-chat] new chat, \\[describe-mode] help")))

(defun org-agent-chat-format-tokens (tokens &optional estimated)
  "Return TOKENS short: 850, 1.2k, 3.4M; with \"~\" first if ESTIMATED."
  (concat (if estimated "~" "")
          (cond ((< tokens 1000) (format "%d" tokens))
                ((< tokens 1000000) (format "%.1fk" (/ tokens 1000.0)))
                (t (format "%.1fM" (/ tokens 1000000.0))))))

(defun org-agent-chat-format-cost (cost &optional unknown)
  "Return COST in USD short: $0, $0.0042, $1.25.
With UNKNOWN (some request's price is unknown), \"?\" is added, or
stands alone when nothing of COST is known."
  (cond ((and unknown (zerop cost)) "$?")
        (t (concat (cond ((zerop cost) "$0")
                         ((< cost 0.0001) "$<0.0001")
                         ((< cost 1)
                          (concat "$" (replace-regexp-in-string
                                       "0+\\'" "" (format "%.4f" cost))))
                         (t (format "$%.2f" cost)))
                   (if unknown "+?" "")))))

(defun org-agent-chat-spent (&optional buffer)
  "Return what the conversation of the chat BUFFER has used, a plist.
BUFFER defaults to the chat buffer named `org-agent-chat-buffer-name';
nil when there is none.  Keys: :tokens, :cost (USD, of the requests
whose price is known), :unknown (non-nil when some price is unknown),
:estimated (non-nil when some tokens were estimated), and :turn, the
same of the last turn, or nil before one."
  (let ((buffer (or buffer (get-buffer org-agent-chat-buffer-name))))
    (when (and (buffer-live-p buffer)
               (with-current-buffer buffer (derived-mode-p 'org-agent-chat-mode)))
      (with-current-buffer buffer
        (let ((turn org-agent-chat--turn-spent))
          (list :tokens org-agent-chat--tokens
                :cost (or (car org-agent-chat--spent) 0)
                :unknown (nth 1 org-agent-chat--spent)
                :estimated (nth 2 org-agent-chat--spent)
                :turn (and turn (list :tokens (nth 0 turn) :cost (nth 1 turn)
                                      :unknown (nth 2 turn) :estimated (nth 3 turn)))))))))

(defun org-agent-chat--usage (event)
  "Count the usage EVENT in this conversation and its last turn."
  (let ((tokens (+ (or (plist-get event :prompt-tokens) 0)
                   (or (plist-get event :completion-tokens) 0)))
        (cost (plist-get event :cost))
        (estimated (plist-get event :estimated))
        (turn (or org-agent-chat--turn-spent (list 0 0 nil nil)))
        (conv (or org-agent-chat--spent (list 0 nil nil))))
    (setq org-agent-chat--tokens (+ org-agent-chat--tokens tokens)
          org-agent-chat--turn-spent
          (list (+ (nth 0 turn) tokens) (+ (nth 1 turn) (or cost 0))
                (or (nth 2 turn) (null cost)) (or (nth 3 turn) estimated))
          org-agent-chat--spent
          (list (+ (nth 0 conv) (or cost 0))
                (or (nth 1 conv) (null cost)) (or (nth 2 conv) estimated)))))

(defun org-agent-chat--usage-label ()
  "The header's usage: the last turn's tokens and cost, then the conversation's."
  (let ((turn org-agent-chat--turn-spent)
        (conv org-agent-chat--spent))
    (cond
     ((and (not turn) conv)             ; continued from its file, no turn yet
      (format "conv %s tok %s"
              (org-agent-chat-format-tokens org-agent-chat--tokens (nth 2 conv))
              (org-agent-chat-format-cost (car conv) (nth 1 conv))))
     ((not turn)
      (format "%s tok" (org-agent-chat-format-tokens org-agent-chat--tokens)))
     (t
      (format "%s tok %s · conv %s tok %s"
              (org-agent-chat-format-tokens (nth 0 turn) (nth 3 turn))
              (org-agent-chat-format-cost (nth 1 turn) (nth 2 turn))
              (org-agent-chat-format-tokens org-agent-chat--tokens (nth 2 conv))
              (org-agent-chat-format-cost (or (car conv) 0) (nth 1 conv)))))))

(defvar-local org-agent-chat--header-cache nil
  "The header line made during the turn in flight: (KEY . LINE), or nil.
KEY is what `org-agent-chat--header-key-p' compares.")

(defun org-agent-chat--header-key-p (key)
  "Return non-nil if KEY, a vector, matches the header line's contents now.
It leaves out the clock and the count of tokens written, which the
ticker refreshes each second."
  (and (eq (aref key 0) org-agent-chat--state)
       (eq (aref key 1) org-agent-chat--backend-name)
       (eq (aref key 2) org-agent-chat--turn-start)
       (eq (aref key 3) org-agent-chat--turn-spent)
       (eq (aref key 4) org-agent-chat--spent)
       (eq (aref key 5) org-agent-chat--tokens)
       (eq (aref key 6) org-agent-chat--focus-title)
       (eq (aref key 7) org-agent-shell-sandbox)))

(defun org-agent-chat--header ()
  "The header line: backend, state, usage and cost, focus, keys.
During a turn, the line made last is reused while what it shows is the
same: redisplay asks for it after every streamed piece, and making it
conses some 3 KB (`format', `substitute-command-keys')."
  (let ((cache org-agent-chat--header-cache))
    (if (and cache org-agent-chat--turn-start (org-agent-chat--header-key-p (car cache)))
        (cdr cache)
      (let ((line (org-agent-chat--make-header)))
        (setq org-agent-chat--header-cache
              (and org-agent-chat--turn-start
                   (cons (vector org-agent-chat--state org-agent-chat--backend-name
                                 org-agent-chat--turn-start org-agent-chat--turn-spent
                                 org-agent-chat--spent org-agent-chat--tokens
                                 org-agent-chat--focus-title org-agent-shell-sandbox)
                         line)))
        line))))

(defun org-agent-chat--make-header ()
  "Make the header line: backend, state, usage and cost, focus, keys."
  (format " org-agent  %s  %s%s  %s%s%s%s"
          (or org-agent-chat--backend-name (org-agent-backends-next-label))
          org-agent-chat--state
          (if org-agent-chat--turn-start
              (format " %ds%s"
                      (round (float-time (time-subtract nil org-agent-chat--turn-start)))
                      (if (> org-agent-chat--streamed-chars 0)
                          ;; Providers count tokens only at the end; about 4 characters each.
                          (format ", ~%d tokens written" (/ org-agent-chat--streamed-chars 4))
                        ""))
            "")
          (org-agent-chat--usage-label)
          (if org-agent-chat--focus-title
              (format "  focus: %s" org-agent-chat--focus-title)
            "")
          (if org-agent-shell-sandbox
              ""
            (propertize "  commands unsandboxed (org-agent-shell-sandbox)"
                        'face 'warning))
          (org-agent-chat--keys-hint)))

(defun org-agent-chat--tick (buffer)
  "Refresh the header line of BUFFER during its turn; stop ticking after it."
  (if (and (buffer-live-p buffer) (buffer-local-value 'org-agent-chat--turn-start buffer))
      (with-current-buffer buffer
        ;; The clock and the tokens written move on: make the header line again.
        (setq org-agent-chat--header-cache nil)
        (force-mode-line-update))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (org-agent-chat--stop-ticker)))))

(defun org-agent-chat--stop-ticker ()
  "Stop refreshing this chat's header line each second."
  (when org-agent-chat--ticker
    (cancel-timer org-agent-chat--ticker)
    (setq org-agent-chat--ticker nil)))

(defun org-agent-chat--focus-here ()
  "The store id and title of the node at point, or nil (in the chat, or not Org)."
  (unless (derived-mode-p 'org-agent-chat-mode)
    (when-let ((id (ignore-errors (org-agent-node-at-point))))
      (cons id (plist-get (org-agent-node id) :title)))))

(defvar org-agent-chat--open-after-build nil
  "The argument of `org-agent-chat' called while the module was being built.")

(defun org-agent-chat--open-after-build ()
  "Open the chat that was asked for while the module was being built."
  (remove-hook 'org-agent--after-build-functions #'org-agent-chat--open-after-build)
  (org-agent-chat (car org-agent-chat--open-after-build)))

;;;###autoload
(defun org-agent-chat (&optional earlier)
  "Open the org-agent chat buffer and return it.
With a prefix argument EARLIER, pick a conversation saved earlier and
continue it with its history.  While the module is being built (the
first time, or after an upgrade), the chat opens once it is loaded,
and this returns nil."
  (interactive "P")
  (if (not (org-agent--start))
      (progn
        (setq org-agent-chat--open-after-build (list earlier))
        (add-hook 'org-agent--after-build-functions #'org-agent-chat--open-after-build)
        (message "org-agent: building the module; the chat opens when it is loaded")
        nil)
    (org-agent-chat--open earlier)))

(defun org-agent-chat--begin ()
  "Begin a new conversation in the current, empty chat buffer."
  (setq org-agent-chat--conversation
        (format "chat-%s-%d" (format-time-string "%Y%m%dT%H%M%S") (random 100000)))
  (insert (format "#+TITLE: org-agent chat\n#+CONVERSATION: %s\n\n%s%s* You\n"
                  org-agent-chat--conversation
                  (org-agent-chat--keys-note)
                  (org-agent-backends-local-model-note))))

(defun org-agent-chat--keys-note ()
  "The chat's first lines: how to send, interrupt, start anew and get help."
  (substitute-command-keys
   "Type your message after the last \"* You\" heading and press \\[org-agent-chat-send] to send it.
While the agent answers, \\[org-agent-chat-quit] (or \\[org-agent-interrupt]) interrupts it.
\\[org-agent-new-chat] saves this chat and starts a new one; \\[universal-argument] \\[org-agent-chat] continues a saved one.
\\[describe-mode] shows every key of the chat.

"))

(defun org-agent-chat--open (earlier)
  "Open the chat buffer (a saved conversation if EARLIER) and return it."
  (let ((focus (org-agent-chat--focus-here))
        (buffer (if earlier
                    (org-agent-chat--continue (org-agent-chat--pick-saved))
                  (get-buffer-create org-agent-chat-buffer-name))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'org-agent-chat-mode)
        (org-agent-chat-mode)
        (org-agent-chat--begin))
      (when focus
        (setq org-agent-chat--focus (car focus)
              org-agent-chat--focus-title (cdr focus))))
    (pop-to-buffer buffer)
    (goto-char (point-max))
    buffer))

;;;; Saved conversations

(defun org-agent-chat--directory ()
  "Where conversations are saved."
  (expand-file-name "chats" org-agent-state-directory))

(defun org-agent-chat--save ()
  "Save the current chat buffer as an Org file in the state directory."
  (when org-agent-chat--conversation
    (let ((dir (org-agent-chat--directory)))
      (make-directory dir t)
      (let ((text (save-restriction (widen) (buffer-substring-no-properties
                                              (point-min) (point-max))))
            (usage (org-agent-chat--usage-keyword))
            (file (expand-file-name (concat org-agent-chat--conversation ".org") dir)))
        (with-temp-buffer
          (insert text)
          (goto-char (point-min))
          (when (and usage (re-search-forward "^#\\+CONVERSATION:.*$" nil t))
            (insert "\n" usage))
          (let ((coding-system-for-write 'utf-8-unix))
            (write-region nil nil file nil 'silent)))))))

(defun org-agent-chat--usage-keyword ()
  "Return the #+USAGE: line keeping the tokens and cost of this chat, or nil.
The file keeps it so that a conversation continued from disk goes on
counting from where it was; the buffer does not show it."
  (when (or (> org-agent-chat--tokens 0) org-agent-chat--spent)
    (let ((spent (or org-agent-chat--spent (list 0 nil nil))))
      (format "#+USAGE: %d tokens, $%s%s%s"
              org-agent-chat--tokens
              (number-to-string (nth 0 spent))
              (if (nth 1 spent) ", some prices unknown" "")
              (if (nth 2 spent) ", some counts estimated" "")))))

(defun org-agent-chat--take-usage-keyword ()
  "Restore the usage a #+USAGE: line of the buffer saved, and remove the line."
  (save-excursion
    (goto-char (point-min))
    (when (re-search-forward
           "^#\\+USAGE: *\\([0-9]+\\) tokens, \\$\\([0-9.e+-]+\\)\\(.*\\)\n?" nil t)
      (let ((rest (match-string 3)))
        (setq org-agent-chat--tokens (string-to-number (match-string 1))
              org-agent-chat--spent
              (list (string-to-number (match-string 2))
                    (and (string-search "unknown" rest) t)
                    (and (string-search "estimated" rest) t)))
        (replace-match "")))))

(defun org-agent-chat--pick-saved ()
  "Ask for a saved conversation, newest first; return its file."
  (let* ((files (sort (directory-files (org-agent-chat--directory) t "\\.org\\'")
                      (lambda (a b) (time-less-p (file-attribute-modification-time (file-attributes b))
                                                 (file-attribute-modification-time (file-attributes a))))))
         (table (org-agent-chat--saved-table files)))
    (unless files
      (user-error "No saved conversations in %s" (org-agent-chat--directory)))
    (cdr (assoc (completing-read "Continue conversation: " table nil t) table))))

(defun org-agent-chat--saved-table (files)
  "An alist (DESCRIPTION . FILE) of the saved conversations FILES, in their order.
Descriptions that would be the same (two chats begun in the same second
with the same words) get the conversation's id, so each is distinct."
  (let* ((described (mapcar (lambda (f) (cons (org-agent-chat--describe f) f)) files))
         (counts (make-hash-table :test #'equal)))
    (dolist (d described)
      (puthash (car d) (1+ (gethash (car d) counts 0)) counts))
    (mapcar (lambda (d)
              (if (> (gethash (car d) counts) 1)
                  (cons (format "%s  [%s]" (car d) (file-name-base (cdr d))) (cdr d))
                d))
            described)))

(defun org-agent-chat--describe (file)
  "A line describing the saved conversation FILE.
When it began (from its id, else when the file was written), the first
words of its first message, and how many messages you sent."
  (with-temp-buffer
    (insert-file-contents file nil 0 20000)
    (goto-char (point-min))
    (let* ((id (if (re-search-forward "^#\\+CONVERSATION: *\\(.+\\)$" nil t)
                   (match-string 1)
                 (file-name-base file)))
           (began (if (string-match
                       "\\`chat-\\([0-9]\\{4\\}\\)\\([0-9]\\{2\\}\\)\\([0-9]\\{2\\}\\)T\\([0-9]\\{2\\}\\)\\([0-9]\\{2\\}\\)\\([0-9]\\{2\\}\\)"
                       id)
                      (format "%s-%s-%s %s:%s:%s" (match-string 1 id) (match-string 2 id)
                              (match-string 3 id) (match-string 4 id) (match-string 5 id)
                              (match-string 6 id))
                    (format-time-string "%F %T" (file-attribute-modification-time
                                                 (file-attributes file)))))
           (first nil)
           (sent 0))
      (goto-char (point-min))
      (while (re-search-forward "^\\* You[ \t]*$" nil t)
        (let ((text (string-trim
                     (buffer-substring-no-properties
                      (min (1+ (point)) (point-max))
                      (save-excursion (if (re-search-forward "^\\* " nil t)
                                          (line-beginning-position)
                                        (point-max)))))))
          (unless (string-empty-p text)
            (setq sent (1+ sent))
            (unless first
              (setq first (replace-regexp-in-string "[ \t\n]+" " " text))))))
      (format "%s  %s  (%d message%s)"
              began
              (if first (truncate-string-to-width first 60 nil nil "…") "(nothing sent)")
              sent (if (= sent 1) "" "s")))))

(defconst org-agent-chat--turn-heading
  "^\\* \\(You\\|Assistant\\|Summary\\)\\(?:[ \t]+:summary:\\)?[ \t]*$"
  "A heading of the chat's turns: \"* You\", \"* Assistant\" or \"* Summary :summary:\".")

(defconst org-agent-chat--summary-preface
  "[A summary of our conversation so far, which you wrote and I may have edited:]\n"
  "What precedes a summary in the history sent to the model.")

(defun org-agent-chat--history ()
  "The exchanges of the current chat as ((user . TEXT) (assistant . TEXT) ...).
Tool calls, reasoning and error blocks stay out; the last, unsent prompt too."
  (let (messages)
    (save-excursion
      (goto-char (point-min))
      (while (re-search-forward org-agent-chat--turn-heading nil t)
        (let* ((summary (equal (match-string 1) "Summary"))
               (role (if (member (match-string 1) '("You" "Summary")) 'user 'assistant))
               (beg (min (1+ (line-end-position)) (point-max)))
               (end (save-excursion (if (re-search-forward "^\\* " nil t) (line-beginning-position) (point-max))))
               (body (buffer-substring-no-properties beg end)))
          ;; Only the answer itself: the text before the first subtree (tools, reasoning)
          ;; and that of the "** Answer" subtrees after tools.
          (when (string-match "^\\*\\* " body)
            (let ((answers (substring body (match-beginning 0)))
                  (parts (list (substring body 0 (match-beginning 0)))))
              (with-temp-buffer
                (insert answers)
                (goto-char (point-min))
                (while (re-search-forward "^\\*\\* Answer[ \t]*\n" nil t)
                  (push (buffer-substring-no-properties
                         (point) (if (re-search-forward "^\\*\\*+ " nil t)
                                     (progn (goto-char (match-beginning 0)) (point))
                                   (point-max)))
                        parts)))
              (setq body (mapconcat #'identity (nreverse parts) "\n"))))
          (setq body (string-trim (replace-regexp-in-string
                                   "#\\+begin_example\nError: \\(?:.\\|\n\\)*?#\\+end_example\n?" "" body)))
          (when (and summary (not (string-empty-p body)))
            (setq body (concat org-agent-chat--summary-preface body)))
          (unless (string-empty-p body)
            ;; A summary and the message after it go as one: roles alternate.
            (if (and (eq role 'user) (eq (car (car messages)) 'user))
                (setcdr (car messages) (concat (cdr (car messages)) "\n\n" body))
              (push (cons role body) messages))))))
    ;; The trailing prompt is not part of the history.
    (let ((history (nreverse messages)))
      (if (and history (eq (car (car (last history))) 'user)
               (not (string-empty-p (org-agent-chat--prompt))))
          (butlast history)
        history))))

(defun org-agent-chat--continue (file)
  "Open the conversation saved in FILE and restore its history in the module."
  (let ((buffer (generate-new-buffer org-agent-chat-buffer-name)))
    (with-current-buffer buffer
      (insert-file-contents file)
      (org-agent-chat-mode)
      (goto-char (point-min))
      (setq org-agent-chat--conversation
            (if (re-search-forward "^#\\+CONVERSATION: *\\(.+\\)$" nil t)
                (match-string 1)
              (file-name-base file)))
      (org-agent-chat--take-usage-keyword)
      (org-agent--chat-restore org-agent-chat--conversation (org-agent-chat--history))
      (goto-char (point-max))
      (unless (save-excursion (re-search-backward "^\\* You[ \t]*$" nil t))
        (insert "\n* You\n")))
    buffer))

;;;; Sending a turn

(defun org-agent-chat--prompt ()
  "The text typed after the last \"* You\" heading, trimmed."
  (save-excursion
    (goto-char (point-max))
    (if (re-search-backward "^\\* You[ \t]*$" nil t)
        (string-trim (buffer-substring-no-properties (line-end-position) (point-max)))
      "")))

(defvar org-agent-chat--skill nil
  "The skill the turn being sent uses from its start (\"/NAME …\"), or nil.")

(defun org-agent-chat-send ()
  "Send the text after the last \"* You\" heading to the agent."
  (interactive nil org-agent-chat-mode)
  (unless (derived-mode-p 'org-agent-chat-mode)
    (user-error "Not in the org-agent chat buffer"))
  (when org-agent-chat--request
    (user-error "The agent is still answering; C-c C-k interrupts it"))
  (let ((prompt (org-agent-chat--prompt)))
    (when (string-empty-p prompt)
      (user-error "Type your message after the last \"* You\" heading"))
    (pcase-let* ((`(,preset . ,unnamed) (org-agent-presets-split-message prompt))
                 (`(,skill . ,text) (org-agent-chat--skill-invocation unnamed))
                 (`(,fitted . ,file) (org-agent-chat--fit text)))
      (let ((org-agent-chat--skill skill)
            (org-agent-presets-message-preset preset)
            (org-agent-chat--pasted (or file org-agent-chat--pasted)))
        (org-agent-chat--dispatch fitted)))))

(defun org-agent-chat--fit (text)
  "TEXT as it may be sent to the model: (TEXT-TO-SEND . FILE-OR-NIL).
A message larger than half the context window is trimmed, set aside
in a file, or not sent (a `user-error'), as `org-agent-oversized-message'
says or the user chooses."
  (let* ((window (org-agent-backends-window))
         (limit (and window (/ window 2)))
         (tokens (/ (string-bytes text) 4))
         (tools (not (org-agent-backends-local-p))))
    (if (or (null limit) (<= tokens limit))
        (cons text nil)
      (let ((choice
             (pcase org-agent-oversized-message
               ((and 'ask (guard noninteractive)) 'refuse)
               ('ask
                (pcase (car (read-multiple-choice
                             (format "This message is about %d tokens; the model reads %d at most. "
                                     tokens window)
                             (append
                              '((?t "trim" "send its beginning, as much as fits"))
                              (and tools '((?f "file" "set it aside in a file the model reads in pages")))
                              '((?n "nothing" "send nothing; edit the message")))))
                  (?t 'trim) (?f 'file) (_ 'refuse)))
               ('file (if tools 'file 'trim))
               (other other))))
        (pcase choice
          ('trim (cons (org-agent-chat--trimmed text (* limit 4)) nil))
          ('file (org-agent-chat--set-aside text tokens))
          (_ (user-error "Not sent: the message is about %d tokens and the model reads %d at \
most; shorten it, or set `org-agent-oversized-message'" tokens window)))))))

(defun org-agent-chat--trimmed (text bytes)
  "The beginning of TEXT, at most BYTES bytes, with a line saying it was cut."
  (let ((end (min (length text) bytes)))
    (while (and (> end 0) (> (string-bytes (substring text 0 end)) bytes))
      (setq end (- end (max 1 (/ (- (string-bytes (substring text 0 end)) bytes) 3)))))
    (concat (substring text 0 end)
            (format "\n\n[The message was cut here to fit: %d of its %d characters are sent.]"
                    end (length text)))))

(defun org-agent-chat--set-aside (text tokens)
  "Write TEXT (about TOKENS tokens) to a file the model may read.
Return (MESSAGE . FILE): MESSAGE tells the model where the text is."
  (let* ((dir (expand-file-name "pasted" org-agent-state-directory))
         (file (expand-file-name (format-time-string "paste-%Y%m%dT%H%M%S.txt") dir)))
    (make-directory dir t)
    (let ((coding-system-for-write 'utf-8-unix))
      (write-region text nil file nil 'silent))
    (cons (format "%s\n\n[The whole message, %d lines and about %d tokens, is in the file %s: \
read it with read_file in pages (offset, limit) as you need it.]"
                  (org-agent-chat--trimmed (car (split-string text "\n\n")) 2000)
                  (length (split-string text "\n")) tokens file)
          file)))

(defun org-agent-chat--skill-invocation (prompt)
  "Split PROMPT \"/NAME TEXT\" naming an active skill into (NAME . TEXT).
Any other PROMPT is (nil . PROMPT).  A bare \"/NAME\" asks the model
to use the skill."
  (if (and (string-match "\\`/\\([a-z0-9]+\\(?:-[a-z0-9]+\\)*\\)\\(?:[ \t\n]+\\|\\'\\)" prompt)
           (seq-find (lambda (s) (equal (plist-get s :name) (match-string 1 prompt)))
                     (org-agent-skills-active)))
      (let ((name (match-string 1 prompt))
            (rest (string-trim (substring prompt (match-end 0)))))
        (cons name (if (string-empty-p rest) (format "Use the skill %s." name) rest)))
    (cons nil prompt)))

(defun org-agent-chat--start-clock ()
  "Start timing the turn being sent, shown in the header line each second."
  (setq org-agent-chat--turn-start (current-time)
        org-agent-chat--streamed-chars 0
        org-agent-chat--turn-spent nil)
  (unless org-agent-chat--ticker
    (setq org-agent-chat--ticker
          (run-at-time 1 1 #'org-agent-chat--tick (current-buffer)))))

(defun org-agent-chat--local-failed ()
  "The local model did not start: chats waiting for it stop waiting.
Each says why, in the server's last words, above the last \"* You\";
the message stays after it, to send again."
  (dolist (buffer (org-agent-chat--buffers))
    (with-current-buffer buffer
      (when (and org-agent-chat--turn-start (not org-agent-chat--request))
        (save-excursion
          (goto-char (point-max))
          (when (re-search-backward "^\\* You[ \t]*$" nil t)
            (insert "- /The local model did not start./  What its server said last:\n"
                    (org-agent-chat--block
                     "example" (or (org-agent-backends-local-output 12) "(nothing)"))
                    "\n")))
        (org-agent-chat--stop-waiting "idle: the local model did not start")))))

(defun org-agent-chat--stop-waiting (state)
  "This chat no longer waits to send its message; its state is STATE."
  (setq org-agent-chat--turn-start nil
        org-agent-chat--state state)
  (org-agent-chat--stop-ticker)
  (force-mode-line-update))

(defun org-agent-chat--dispatch (prompt)
  "Send PROMPT, starting the local model first if it is the backend and not up."
  (org-agent-chat--start-clock)
  ;; Now, while the command's bindings (tier, tool rounds) hold.
  (let ((options (org-agent-chat--options)))
    ;; `org-agent-local-model' may have been `setq'd since its server started.
    (org-agent-backends-drop-stale-local)
    (if (and (org-agent-backends-local-p) (not (org-agent-backends-local-backend)))
        ;; No backend configured: bring up the local model, then send.
        (let ((buffer (current-buffer)))
          (setq org-agent-chat--state "starting the local model…")
          (unless (org-agent-backends-local-started-p)
            (org-agent-backends-start-local
             (lambda ()
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   ;; Unless the user stopped waiting (C-g, C-c C-k).
                   (when (and org-agent-chat--turn-start (not org-agent-chat--request))
                     (org-agent-chat--send-prompt prompt (org-agent-backends-cascade)
                                                  options)))))
             #'org-agent-chat--local-failed))
          (force-mode-line-update)
          nil)
      (org-agent-chat--send-compacted prompt (org-agent-backends-cascade) options))))

(defun org-agent-chat--options ()
  "The options of the next turn for the module."
  (append
   (and org-agent-chat--tool-rounds (list :tool-rounds org-agent-chat--tool-rounds))
   (and org-agent-chat--skill (list :skill org-agent-chat--skill))
   (and org-agent-chat--pasted (list :pasted org-agent-chat--pasted))
   ;; Messages set aside in files (too large to send): the model may read them.
   (let ((pastes (expand-file-name "pasted" org-agent-state-directory)))
     (and (file-directory-p pastes) (list :paste-dir pastes)))
   ;; The chat's only: a background run has no one to ask about a command.
   (org-agent-shell-options)
   (and (org-agent-backends-local-p)
        ;; A small model on a CPU answers from the notes in its context, greedily
        ;; decoded: llama.cpp's tool grammar made it write a token every few seconds,
        ;; and its tool template refused prose while tools were offered.
        ;; Symbolic first: what the store answers exactly (waiting, due, overdue…), it
        ;; answers, and the model only phrases it.
        (list :tool-rounds 0
              :store-first t
              :temperature (or org-agent-temperature 0)))
   (org-agent-chat-common-options)))

(defun org-agent-chat-common-options ()
  "The options of the next turn, whatever the backend.
The current preset's settings come first, so they win."
  (append
   (org-agent-presets-options)
   (list :max-depth org-agent-max-depth
         :tool-rounds org-agent-tool-rounds
         :temperature org-agent-temperature
         :focus org-agent-chat--focus
         :tools (org-agent-tools-specs)
         :audit-file (expand-file-name (or org-agent-audit-file
                                           (expand-file-name "audit.org" org-agent-state-directory)))
         :interactive (or (not noninteractive) org-agent-chat-ask-in-batch)
         :permissions org-agent-permissions
         :tier org-agent-chat--tier)
   (org-agent-backends-options)
   (org-agent-context-options)
   (list :embedding (org-agent-semantic-backend)
         :inbox (bound-and-true-p org-agent-inbox)
         :related-threshold org-agent-related-threshold
         :context-budget org-agent-context-budget
         :today (format-time-string "%F %a")
         :due-before (format-time-string
                      "%F" (time-add nil (* 86400 (1+ org-agent-context-due-days))))
         :done-since (format-time-string
                      "%F" (time-subtract nil (* 86400 org-agent-context-recent-days))))))

(defun org-agent-chat-stimulus (text conversation backends options)
  "Send TEXT as a message of CONVERSATION to BACKENDS with the turn OPTIONS.
The privacy rules and the MCP servers are handed over first (they may
have been `setq'd since).  Return the module's request id; the turn's
events come through `org-agent-chat-functions' with that :request."
  (org-agent--send-privacy)
  (org-agent-mcp-sync)
  ;; Raw bytes (pasted binary, undecodable file text) go as U+FFFD: the module reads
  ;; every string of a plist so, as it reads a summarized buffer's text.
  (org-agent--stimulus
   (list :type :event
         :payload (list :sensor :chat-message :text text)
         :meta (list :session conversation)
         :depth 0)
   backends options))

(defun org-agent-chat--send-prompt (prompt backends options)
  "Send PROMPT (already in the buffer) to BACKENDS and show the answer as it comes.
OPTIONS are the turn's, from `org-agent-chat--options'."
  (org-agent-chat--sync-summary)
  (goto-char (point-max))
  (unless (bolp) (insert "\n"))
  (insert "* Assistant\n")
  (setq org-agent-chat--marker (copy-marker (point) t)
        org-agent-chat--reasoning nil
        org-agent-chat--after-tool nil
        org-agent-chat--state "thinking…"
        org-agent-chat--step-start nil
        org-agent-chat--backend-name (org-agent-backends-label (car backends)))
  (condition-case err
      (let ((request (org-agent-chat-stimulus prompt org-agent-chat--conversation
                                              backends options)))
        (setq org-agent-chat--request request)
        (unless org-agent-chat--turn-start (org-agent-chat--start-clock))
        (puthash request (current-buffer) org-agent-chat--in-flight)
        request)
    (error
     (org-agent-chat--insert
      (org-agent-chat--block "example" (concat "Error: " (error-message-string err))))
     (org-agent-chat--finish nil)
     nil)))

;;;; Compaction

(defcustom org-agent-chat-compact-at 0.6
  "Compact the chat once its history takes this share of the context window.
Before a message is sent, when the conversation so far is estimated
to take more than this fraction of the backend's :context-window,
its older turns are first summarised into a \"* Summary :summary:\"
heading, which you can read and edit; the model gets the summary
instead of them.  nil: only when asked (`org-agent-chat-compact').
Without a known context window nothing is compacted on its own."
  :type '(choice (const :tag "Only when asked" nil) number)
  :group 'org-agent-chat)

(defcustom org-agent-chat-compact-keep 2
  "How many of the latest exchanges a compaction keeps as they are."
  :type 'integer
  :group 'org-agent-chat)

(defvar-local org-agent-chat--summary-sent nil
  "The summary the module's history of this chat holds, or nil.")

(defvar org-agent-chat--compactions (make-hash-table)
  "Request of a summary being written → (BUFFER FROM TO TEXT THEN).")

(defun org-agent-chat--history-tokens ()
  "About how many tokens the history of the current chat takes."
  (/ (apply #'+ (mapcar (lambda (m) (string-bytes (cdr m))) (org-agent-chat--history))) 4))

(defun org-agent-chat--older-turns (keep)
  "Return the region of the chat before its KEEP latest exchanges, or nil.
The region is (FROM . TO); nil when there is nothing older to summarise."
  (save-excursion
    (goto-char (point-min))
    (let (starts first)
      (while (re-search-forward org-agent-chat--turn-heading nil t)
        (let ((heading (match-string 1))
              (at (line-beginning-position)))
          (unless first (setq first at))
          ;; A "* You" with an answer after it begins an exchange.
          (when (and (equal heading "You")
                     (save-excursion
                       (and (re-search-forward org-agent-chat--turn-heading nil t)
                            (equal (match-string 1) "Assistant"))))
            (push at starts))))
      (let ((to (nth (1- (max keep 1)) starts)))
        (and to first (< first to) (cons first to))))))

(defun org-agent-chat--compaction-due-p ()
  "Whether the current chat's history should be compacted before the next send."
  (let ((window (org-agent-backends-window)))
    (and org-agent-chat-compact-at window
         (> (org-agent-chat--history-tokens) (* org-agent-chat-compact-at window))
         (org-agent-chat--older-turns org-agent-chat-compact-keep))))

(defun org-agent-chat--send-compacted (prompt backends options)
  "Send PROMPT to BACKENDS with OPTIONS, compacting the history first if it is due."
  (if (not (org-agent-chat--compaction-due-p))
      (org-agent-chat--send-prompt prompt backends options)
    (let ((buffer (current-buffer)))
      (org-agent-chat--compact
       (lambda ()
         (when (buffer-live-p buffer)
           (with-current-buffer buffer
             (when org-agent-chat--turn-start
               (org-agent-chat--send-prompt prompt backends options)))))))))

;;;###autoload
(defun org-agent-chat-compact ()
  "Summarise the chat's older exchanges now, into a summary heading.
That is \"* Summary :summary:\".
The chat at hand, else `org-agent-chat-buffer-name'.  The latest
`org-agent-chat-compact-keep' exchanges stay as they are.  The
summary is Org you may edit: what the model gets is what the heading
says when the next message is sent."
  (interactive)
  (with-current-buffer (if (derived-mode-p 'org-agent-chat-mode)
                           (current-buffer)
                         (or (get-buffer org-agent-chat-buffer-name)
                             (user-error "No chat to compact")))
    (when (or org-agent-chat--request (org-agent-chat--compacting-p))
      (user-error "The agent is busy; C-c C-k interrupts it"))
    (unless (org-agent-chat--older-turns org-agent-chat-compact-keep)
      (user-error "Nothing to compact: the chat has no more than %d exchanges"
                  org-agent-chat-compact-keep))
    (org-agent-chat--compact nil)))

(defun org-agent-chat--compacting-p ()
  "Whether a summary of the current chat is being written."
  (seq-find (lambda (entry) (eq (car entry) (current-buffer)))
            (hash-table-values org-agent-chat--compactions)))

(defun org-agent-chat--compact (then)
  "Have the older exchanges of the current chat summarised; then call THEN, if any.
THEN is called whether or not the summary could be written."
  (pcase-let* ((`(,from . ,to) (org-agent-chat--older-turns org-agent-chat-compact-keep))
               (older (buffer-substring-no-properties from to))
               (prompt (concat "Summarise the conversation below for yourself, so that it \
can go on from your summary alone: the facts and figures it established, what was decided, \
what is still open, and the notes it was about (with their ids).  Write Org markup (lists, \
no headings), as short as it can be while keeping all of that.\n\n\
-----BEGIN CONVERSATION-----\n" older "\n-----END CONVERSATION-----")))
    (setq org-agent-chat--state "compacting the conversation…")
    (force-mode-line-update)
    (condition-case err
        (let ((request (org-agent-chat-stimulus
                        prompt
                        (format "%s-compact-%d" org-agent-chat--conversation (random 1000000))
                        (org-agent-backends-cascade)
                        (append (list :tool-rounds 0 :interactive nil)
                                (org-agent-backends-options)))))
          (puthash request (list (current-buffer) (copy-marker from) (copy-marker to) "" then)
                   org-agent-chat--compactions))
      (error
       (message "org-agent: the conversation could not be compacted: %s"
                (error-message-string err))
       (setq org-agent-chat--state "idle")
       (when then (funcall then))))))

(defun org-agent-chat--compaction-event (event)
  "Take the chat EVENT if it belongs to a summary being written."
  (when-let ((entry (gethash (plist-get event :request) org-agent-chat--compactions)))
    (pcase-let ((`(,buffer ,from ,to ,text ,then) entry))
      (pcase (plist-get event :kind)
        ('text (setf (nth 3 entry) (concat text (plist-get event :text))))
        ((and kind (or 'done 'error 'interrupted))
         (remhash (plist-get event :request) org-agent-chat--compactions)
         (let ((summary (string-trim (or (and (eq kind 'done) (plist-get event :answer)) ""))))
           (if (or (not (eq kind 'done)) (string-empty-p summary))
               (message "org-agent: the conversation could not be compacted%s"
                        (if (eq kind 'error) (format ": %s" (plist-get event :message)) ""))
             (when (buffer-live-p buffer)
               (with-current-buffer buffer
                 (org-agent-chat--put-summary from to summary)))))
         (when (buffer-live-p buffer)
           (with-current-buffer buffer
             (setq org-agent-chat--state (if org-agent-chat--turn-start "thinking…" "idle"))
             (force-mode-line-update)))
         (set-marker from nil)
         (set-marker to nil)
         (when then (funcall then)))))))

(add-hook 'org-agent-chat-functions #'org-agent-chat--compaction-event)

(defun org-agent-chat--put-summary (from to summary)
  "Replace the exchanges from FROM to TO with a summary heading holding SUMMARY.
The module's history of the chat becomes the buffer's."
  (let ((inhibit-read-only t))
    (save-excursion
      (goto-char from)
      (delete-region from to)
      (insert "* Summary :summary:\n"
              ;; Headlines of the summary stay inside it.
              (replace-regexp-in-string "^\\*" ",*" summary) "\n")))
  (setq org-agent-chat--summary-sent nil)
  (org-agent-chat--sync-summary t)
  (org-agent-chat--save))

(defun org-agent-chat--summary-text ()
  "The text of the chat's summary heading, or nil."
  (save-excursion
    (goto-char (point-min))
    (when (re-search-forward "^\\* Summary[ \t]+:summary:[ \t]*$" nil t)
      (string-trim (buffer-substring-no-properties
                    (line-end-position)
                    (if (re-search-forward "^\\* " nil t) (line-beginning-position)
                      (point-max)))))))

(defun org-agent-chat--sync-summary (&optional force)
  "Give the module the buffer's history when its summary was edited (or FORCE)."
  (let ((summary (org-agent-chat--summary-text)))
    (when (and org-agent-chat--conversation
               (or force (and summary (not (equal summary org-agent-chat--summary-sent)))))
      (org-agent--chat-restore org-agent-chat--conversation (org-agent-chat--history))
      (setq org-agent-chat--summary-sent summary))))

;;;; Commands

(defun org-agent--redact-private-now (text file)
  "TEXT, the contents of FILE, without its private subtrees, by the current rules."
  (org-agent--require-started)
  (org-agent--send-privacy)
  (org-agent--redact-private text file))

;;;###autoload
(defun org-agent-ask (question)
  "Ask the agent QUESTION from the minibuffer; the answer comes in the chat.
The node at point, if any, is the focus of the question."
  (interactive (list (read-string "Ask org-agent: ")))
  (when (string-empty-p (string-trim question))
    (user-error "Nothing to ask"))
  (org-agent-chat--command question question))

(defun org-agent-chat--command (shown sent)
  "Open the chat (focused on the node at point) and send a message.
SHOWN is what the chat shows of it after \"* You\"; SENT is the text
the agent receives."
  (org-agent--require-started)
  (with-current-buffer (org-agent-chat)
    (when org-agent-chat--request
      (user-error "The agent is still answering; C-c C-k interrupts it"))
    (unless (string-empty-p (org-agent-chat--prompt))
      (user-error "The chat has an unsent message; send or clear it first"))
    (goto-char (point-max))
    (insert shown)
    (org-agent-chat--dispatch sent)))

;;;###autoload
(defun org-agent-summarize-buffer ()
  "Ask the agent to summarize the current buffer; the summary comes in the chat.
The buffer's text goes with the question (up to
`org-agent-summarize-max-chars'); in an Org buffer the node at point
is the focus."
  (interactive)
  (let* ((name (if buffer-file-name (abbreviate-file-name buffer-file-name) (buffer-name)))
         (text (org-agent--redact-private-now
                ;; A unibyte buffer (visited literally) holds bytes, not text: read them
                ;; as UTF-8; what is left undecoded the module takes as U+FFFD.
                (if enable-multibyte-characters
                    (org-agent--buffer-text)
                  (decode-coding-string (org-agent--buffer-text) 'utf-8-unix t))
                (if buffer-file-name (expand-file-name buffer-file-name) (buffer-name))))
         (cut (> (length text) org-agent-summarize-max-chars))
         (shown (format "Summarize the buffer %s." name))
         (org-agent-chat--tier 'reflex)
         (org-agent-chat--pasted (if buffer-file-name
                                     (expand-file-name buffer-file-name)
                                   (buffer-name)))
         ;; The text goes with the question: nothing to look up.
         (org-agent-chat--tool-rounds 0))
    (org-agent-chat--command
     shown
     (format "%s\n\nIts text%s:\n\n#+begin_example\n%s\n#+end_example"
             shown
             (if cut (format " (the first %d characters of %d)"
                             org-agent-summarize-max-chars (length text))
               "")
             (org-escape-code-in-string
              (if cut (substring text 0 org-agent-summarize-max-chars) text))))))

;;;###autoload
(defun org-agent-organize-subtree ()
  "Ask the agent to organize the Org subtree at point.
The agent sees the subtree (the node at point is the focus) and
proposes edits — TODO states, tags, schedules, new child headlines,
clearer bodies — each shown in the chat for you to approve or deny."
  (interactive nil org-mode)
  (unless (derived-mode-p 'org-mode)
    (user-error "Not in an Org buffer"))
  (when (org-before-first-heading-p)
    (user-error "Point is not in a subtree"))
  (when (org-agent-backends-local-p)
    (user-error "Organizing a subtree edits it with tools, which the local model cannot \
call: set `org-agent-backends' (README.org, \"LLM backends and API keys\")"))
  (let* ((id (or (org-agent-node-at-point)
                 (user-error "This buffer is not in the store; save it first")))
         (title (plist-get (org-agent-node id) :title))
         (org-agent-chat--tier 'reasoning))
    (org-agent--send-privacy)
    (when (org-agent--private-p id)
      (user-error "This subtree is private (`org-agent-private-tags', \
`org-agent-private-files'): the agent may not see it"))
    (org-agent-chat--command
     (format "Organize the subtree \"%s\"." title)
     (format "Organize the subtree \"%s\" (id %s), shown above with its children. \
Read its children with read_node where you need their bodies. Then propose \
the edits that would make it clearer and more actionable: TODO states, tags, \
schedules or deadlines, child headlines for next steps, a clearer body. Make \
each edit with the edit tools (I approve each one), then say briefly what you \
changed and why." title id))))

;;;###autoload
(defun org-agent-interrupt ()
  "Stop every agent turn and background job (embedding, search) in flight."
  (interactive)
  (let ((n (if (fboundp 'org-agent--chat-cancel-all) (org-agent--chat-cancel-all) 0)))
    ;; Chats still waiting for the local model to start have no turn in the module yet.
    (dolist (buffer (org-agent-chat--buffers))
      (with-current-buffer buffer
        (when (and org-agent-chat--turn-start (not org-agent-chat--request))
          (org-agent-chat--stop-turn)
          (setq n (1+ n)))))
    (message "org-agent: %s" (if (> n 0) "interrupting" "nothing to interrupt"))))

(defun org-agent-chat--buffers ()
  "The live chat buffers."
  (seq-filter (lambda (b) (with-current-buffer b (derived-mode-p 'org-agent-chat-mode)))
              (buffer-list)))

(defun org-agent-chat--stop-turn ()
  "Stop the turn of this chat buffer, if any; return non-nil if there was one.
A turn the module runs is cancelled (its `interrupted' event ends it
in the buffer); a message waiting for the local model to start is
not sent."
  (cond
   (org-agent-chat--request
    (org-agent--cancel org-agent-chat--request)
    (setq org-agent-chat--state "interrupting…")
    (force-mode-line-update)
    t)
   (org-agent-chat--turn-start
    (org-agent-chat--stop-waiting "idle: not sent, you interrupted")
    t)))

(defun org-agent-chat-quit ()
  "Interrupt the agent's turn in this chat, or quit as \\[keyboard-quit] does.
While the agent answers, \\[keyboard-quit] in the chat stops its turn
\(as `org-agent-interrupt' does, for this chat only); otherwise it is
`keyboard-quit'.  With an active region it only deactivates it, as
`keyboard-quit' does: the next one interrupts."
  (interactive nil org-agent-chat-mode)
  (if (and (derived-mode-p 'org-agent-chat-mode) (not (region-active-p))
           (org-agent-chat--stop-turn))
      (message "org-agent: interrupting")
    (keyboard-quit)))

(defun org-agent-chat--kill-query ()
  "Ask before the chat buffer is killed with a turn in flight, then stop the turn.
In batch Emacs nobody can answer: the turn is stopped without asking.
For `kill-buffer-query-functions'."
  (or (not (org-agent-chat--busy-here))
      (when (or noninteractive
                (yes-or-no-p "The agent is still answering in this chat; interrupt it and kill the buffer? "))
        (org-agent-chat--stop-turn)
        t)))

(defun org-agent-chat--killed ()
  "Stop the turn of the chat buffer being killed, and forget it.
The module's last events for it then find no buffer; the turn is no
longer counted as in flight.  For `kill-buffer-hook'."
  (org-agent-chat--stop-turn)
  (when org-agent-chat--request
    (remhash org-agent-chat--request org-agent-chat--in-flight)
    (setq org-agent-chat--request nil))
  (org-agent-chat--stop-ticker))

(defun org-agent-chat--kill-emacs-query ()
  "Ask before Emacs exits while the agent answers in a chat, then stop it.
In batch Emacs they are stopped without asking.  For
`kill-emacs-query-functions'."
  (let ((busy (seq-filter (lambda (b) (buffer-local-value 'org-agent-chat--request b))
                          (org-agent-chat--buffers))))
    (or (null busy)
        (when (or noninteractive
                  (y-or-n-p (format "The agent is still answering in %s; interrupt it and quit? " (mapconcat #'buffer-name busy ", "))))
          (dolist (b busy)
            (with-current-buffer b (org-agent-chat--stop-turn)))
          t))))

(add-hook 'kill-emacs-query-functions #'org-agent-chat--kill-emacs-query)

(defun org-agent-busy-p ()
  "Whether an agent turn is in flight, in a chat buffer that is still there."
  (maphash (lambda (request buffer)
             (unless (buffer-live-p buffer)
               (remhash request org-agent-chat--in-flight)))
           org-agent-chat--in-flight)
  (> (hash-table-count org-agent-chat--in-flight) 0))

;;;###autoload
(defun org-agent-new-chat ()
  "Save the current conversation and start a new one in the chat buffer.
The conversation shown in the chat (the current buffer, when it is a
chat) is saved as each turn saves it, and can be continued with
\\[universal-argument] \\[org-agent-chat]; the new one has its own id,
so nothing of the old one is sent with its messages.  While the agent
answers, interrupt it first (\\[org-agent-interrupt])."
  (interactive)
  (let ((buffer (if (derived-mode-p 'org-agent-chat-mode)
                    (current-buffer)
                  (get-buffer org-agent-chat-buffer-name))))
    (if (not (buffer-live-p buffer))
        (org-agent-chat)
      (with-current-buffer buffer
        (when (org-agent-chat--busy-here)
          (user-error "The agent is still answering; %s interrupts it"
                      (substitute-command-keys "\\[org-agent-chat-quit]")))
        (when org-agent-chat--question
          (org-agent-chat--close-question "not answered: a new chat began"))
        (org-agent-chat--save)
        (let ((old org-agent-chat--conversation)
              (inhibit-read-only t))
          (erase-buffer)
          (org-agent-chat--begin)
          (setq org-agent-chat--tokens 0
                org-agent-chat--spent nil
                org-agent-chat--turn-spent nil
                org-agent-chat--reasoning nil
                org-agent-chat--backend-name nil
                org-agent-chat--state "idle")
          ;; Its saved file continues it, history and all; the module need not keep it.
          (when (and old (fboundp 'org-agent--chat-forget))
            (org-agent--chat-forget old))
          (message "org-agent: a new chat; the last one is saved (%s continues it)"
                   (substitute-command-keys "\\[universal-argument] \\[org-agent-chat]"))))
      (pop-to-buffer buffer)
      (goto-char (point-max))
      buffer)))

(defvar org-agent-context-preview-buffer "*org-agent-context*"
  "The buffer `org-agent-context-preview' shows the request in.")

;;;###autoload
(defun org-agent-context-preview ()
  "Show exactly what the next chat request would send.
The request body for the first backend of the cascade: the system
prompt with the notes the agent would see (the focus node, related
notes, active projects, recent completions, within the context
budget, never a private note), the conversation so far with the text
after the last \"* You\" heading, and every tool's schema.  Nothing
is sent to the LLM."
  (interactive)
  (org-agent--require-started)
  ;; The chat at hand (a resumed one too), else the default one.
  (with-current-buffer (if (derived-mode-p 'org-agent-chat-mode) (current-buffer) (org-agent-chat))
    (let* ((prompt (org-agent-chat--prompt))
           (text (if (string-empty-p prompt) "(your next message)" prompt))
           (backends (org-agent-backends-cascade)))
      (org-agent--send-privacy)
      (puthash (org-agent--preview-request org-agent-chat--conversation
                                           text backends (org-agent-chat--options))
               #'org-agent-chat--show-preview
               org-agent--callbacks)
      (message "org-agent: assembling the request..."))))

(defun org-agent-chat--show-preview (event)
  "Show the request of EVENT, a `preview' event (or say why there is none)."
  (if (not (eq (plist-get event :type) 'preview))
      (message "org-agent: %s" (plist-get event :message))
    (with-current-buffer (get-buffer-create org-agent-context-preview-buffer)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "POST %s\nBackend: %s\n\n" (plist-get event :url)
                        (plist-get event :backend)))
        (insert (plist-get event :body) "\n")
        (goto-char (point-min))
        (if (fboundp 'js-json-mode) (js-json-mode) (js-mode))
        (setq buffer-read-only t))
      (display-buffer (current-buffer)))))

;;;; Streaming the answer

(defun org-agent-chat--insert (text)
  "Insert TEXT where the answer grows, keeping the user's point where it was."
  (unless (string-empty-p text)
    (let ((at (marker-position org-agent-chat--marker))
          (windows nil))
      ;; Windows whose point followed the answer keep following it; the others
      ;; stay where the user put them.
      (dolist (w (get-buffer-window-list nil nil t))
        (when (= (window-point w) at) (push w windows)))
      (if (= (point) at)
          ;; Following the answer, as while it streams: no `save-excursion', whose
          ;; marker would be garbage made at every piece.
          (progn (goto-char at)
                 (insert text)
                 (goto-char org-agent-chat--marker))
        (save-excursion
          (goto-char at)
          (insert text)))
      (dolist (w windows) (set-window-point w org-agent-chat--marker)))))

(defun org-agent-chat--stream (text)
  "Insert streamed TEXT, the pieces of one `text' event of the module.
The module paces these events (see `org-agent-chat-redisplay-interval'):
each is inserted as it arrives."
  (when org-agent-chat--after-tool
    ;; The answer goes on after tool subtrees: give it a heading of its own, or folding
    ;; the last tool subtree would hide it.
    (setq org-agent-chat--after-tool nil)
    (org-agent-chat--insert "** Answer\n"))
  (unless org-agent-chat--step-start
    (setq org-agent-chat--step-start (copy-marker org-agent-chat--marker)))
  (org-agent-chat--insert
   (org-agent-chat--neutral-answer
    text (with-current-buffer (marker-buffer org-agent-chat--marker)
           (let ((at (marker-position org-agent-chat--marker)))
             (or (= at (point-min)) (eq (char-before at) ?\n)))))))

(defun org-agent-chat--neutral-answer (text at-line-start)
  "TEXT with each line that would begin a turn or a step of the chat comma-escaped.
A line of the model's answer starting \"* \" or \"** \" would read back as
a turn (\"* You\": a forged message of the user's) or a step; it gets a
comma, as Org escapes code.  A lone \"*\" or \"**\" ending TEXT is
escaped too, since the rest of its line may come in the next piece.
AT-LINE-START says whether TEXT's first line begins a line."
  (if (not (or (string-search "\n*" text)
               (and at-line-start (string-prefix-p "*" text))))
      ;; No line of TEXT starts with a star: TEXT itself, not a copy, since this runs
      ;; for every piece of a streamed answer.
      text
    (let* ((guarded (if at-line-start text (concat "x" text)))
           (escaped (replace-regexp-in-string "^\\(\\*\\*?\\)\\( \\|$\\)" ",\\1\\2"
                                              guarded t)))
      (if at-line-start escaped (substring escaped 1)))))

(defun org-agent-chat--block (kind text)
  "TEXT in an Org block of KIND, escaped so it cannot end the block early."
  (format "#+begin_%s\n%s%s#+end_%s\n" kind
          (org-escape-code-in-string text)
          (if (string-suffix-p "\n" text) "" "\n")
          (car (split-string kind))))

(defun org-agent-chat--conclude (heading text)
  "Insert TEXT, the end of a turn, where the user can see it.
After tool subtrees it goes under a heading of its own (HEADING):
inside the last one, folding would hide it."
  (org-agent-chat--insert
   (if org-agent-chat--after-tool
       (format "\n** %s\n%s" heading text)
     (concat "\n" text))))

;;;; Questions

(defvar org-agent-chat-question-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'org-agent-chat-approve)
    (define-key map "a" #'org-agent-chat-approve-for-conversation)
    (define-key map "n" #'org-agent-chat-deny)
    map)
  "Keys on a question of the agent in the chat.")

(defun org-agent-chat--ask (event)
  "Show the question of EVENT: the proposed action, its diff, and the keys.
A new skill (create-skill) shows as its whole file, Elisp to evaluate
\(eval-elisp) as its code; each is approved on its own, never for the
conversation, as is anything a wall asks about whatever was approved
\(an edit after untrusted content, through a symbolic link): the
event's :once-only says so."
  (let* ((action (plist-get event :action))
         (verb (plist-get action :action))
         (new-skill (eq verb :create-skill))
         ;; Why it cannot be approved for the conversation, when it cannot.
         (each-time (pcase verb
                      (:create-skill "each new skill is approved on its own")
                      (:eval-elisp "each evaluation is approved on its own")
                      (_ (and (plist-get event :once-only)
                              "this is asked each time, whatever was approved"))))
         (preview (and (eq (plist-get action :target) :emacs)
                       (org-agent-actuator-preview action)))
         (start (marker-position org-agent-chat--marker)))
    (org-agent-chat--insert
     (concat
      (format "\n** Approve? %s\n" (plist-get event :name))
      (mapconcat (lambda (r) (format "- %s\n" r)) (plist-get event :reasons) "")
      ;; The diff below is the draft's whole text: its arguments on one line say no more.
      (cond
       (new-skill (format "- the new skill %s, in full:\n" (plist-get action :name)))
       ((eq verb :eval-elisp)
        (concat "- the code, to run in this Emacs:\n"
                (org-agent-chat--block "src emacs-lisp" (plist-get action :code))))
       (t (format "- arguments: =%s=\n" (plist-get event :arguments))))
      (cond
       ((plist-get preview :error)
        (format "- it would fail: %s\n" (plist-get preview :error)))
       ((and preview (not (string-empty-p (plist-get preview :diff))))
        (org-agent-chat--block "src diff" (plist-get preview :diff))))))
    (let ((line (copy-marker (marker-position org-agent-chat--marker))))
      (org-agent-chat--insert
       (propertize (if each-time
                       (format "[y] approve  [n] deny  (%s)\n" each-time)
                     "[y] approve once  [a] approve for this conversation  [n] deny\n")
                   'face 'org-warning))
      ;; The keys work anywhere on the question.
      (let ((overlay (make-overlay (1+ start) org-agent-chat--marker)))
        (overlay-put overlay 'keymap org-agent-chat-question-map)
        (overlay-put overlay 'evaporate t)
        (setq org-agent-chat--question (list (plist-get event :reply) line overlay each-time)
              org-agent-chat--state "waiting for your answer"))
      (let ((window (display-buffer (current-buffer))))
        (when (window-live-p window)
          (set-window-point window line)))
      (goto-char line)
      (message "org-agent asks to run %s: y approve, %sn deny (in %s)"
               (plist-get event :name)
               (if each-time "" "a approve for the conversation, ")
               (buffer-name)))))

(defun org-agent-chat--close-question (label)
  "Replace the keys line of the pending question with LABEL; return its reply id."
  (pcase-let ((`(,reply ,line ,overlay ,_) org-agent-chat--question))
    (setq org-agent-chat--question nil)
    (delete-overlay overlay)
    (save-excursion
      (goto-char line)
      (delete-region line (line-beginning-position 2))
      (insert (format "- /%s/\n" label)))
    (set-marker line nil)
    reply))

(defun org-agent-chat--settle (answer label)
  "Send ANSWER to the pending question of this chat and show LABEL in its place."
  (unless org-agent-chat--question
    (user-error "The agent is not asking anything"))
  (let ((reply (org-agent-chat--close-question label)))
    (setq org-agent-chat--state "thinking…")
    (org-agent--answer reply answer)
    (force-mode-line-update)))

(defun org-agent-chat--question-buffer ()
  "The chat buffer whose question to answer: this one, or any that asks."
  (if (and (derived-mode-p 'org-agent-chat-mode) org-agent-chat--question)
      (current-buffer)
    (or (seq-find (lambda (b) (buffer-local-value 'org-agent-chat--question b))
                  (seq-filter (lambda (b) (with-current-buffer b
                                            (derived-mode-p 'org-agent-chat-mode)))
                              (buffer-list)))
        (user-error "The agent is not asking anything"))))

(defun org-agent-chat-approve ()
  "Approve the action the agent asks about, this once."
  (interactive nil org-agent-chat-mode)
  (with-current-buffer (org-agent-chat--question-buffer)
    (org-agent-chat--settle 'once "approved once")))

(defun org-agent-chat-approve-for-conversation ()
  "Approve the action the agent asks about, and its kind for this conversation.
A new skill, or Elisp to evaluate, is approved on its own: this
approves it once."
  (interactive nil org-agent-chat-mode)
  (with-current-buffer (org-agent-chat--question-buffer)
    (if (nth 3 org-agent-chat--question)
        (org-agent-chat--settle 'once (format "approved once: %s"
                                              (nth 3 org-agent-chat--question)))
      (org-agent-chat--settle 'conversation "approved for this conversation"))))

(defun org-agent-chat-deny ()
  "Deny the action the agent asks about; the agent is told so."
  (interactive nil org-agent-chat-mode)
  (with-current-buffer (org-agent-chat--question-buffer)
    (org-agent-chat--settle 'deny "denied")))

;;;; Events from the module

(defun org-agent-chat--finish (answer)
  "End the current turn (ANSWER is nil on error) and open a new prompt."
  (when org-agent-chat--question
    (org-agent-chat--close-question "not answered: the turn ended"))
  (when org-agent-chat--reasoning
    (org-agent-chat--insert
     (concat "** Reasoning\n" (org-agent-chat--block "quote" org-agent-chat--reasoning))))
  (let ((conversation org-agent-chat--conversation))
    (remhash org-agent-chat--request org-agent-chat--in-flight)
    (setq org-agent-chat--request nil
          org-agent-chat--turn-start nil
          org-agent-chat--state "idle")
    (org-agent-chat--stop-ticker)
    (save-excursion
      (goto-char (point-max))
      (unless (bolp) (insert "\n"))
      (insert "* You\n"))
    (goto-char (point-max))
    ;; Show tool calls and reasoning folded.
    (save-excursion
      (goto-char (point-min))
      (while (re-search-forward "^\\*\\* \\(Tool\\|Reasoning\\|Approve\\|Consensus\\)" nil t)
        (org-agent--fold-subtree)))
    (force-mode-line-update)
    (org-agent-chat--save)
    (run-hook-with-args 'org-agent-turn-finished-functions conversation answer)))

(defun org-agent-chat--failover (event)
  "A backend failed (EVENT); drop what it streamed and say who answers now."
  (when (and (plist-get event :discard) org-agent-chat--step-start)
    (delete-region org-agent-chat--step-start org-agent-chat--marker))
  (setq org-agent-chat--step-start nil)
  (let ((next (plist-get event :next)))
    (when next
      (setq org-agent-chat--backend-name
            (org-agent-backends-label
             (or (org-agent-backends-named next) (list :name next)))))
    (org-agent-chat--insert
     (format "\n- /%s failed: %s%s/\n" (plist-get event :backend) (plist-get event :message)
             (if next (format "; asking %s" next) "")))))

(defun org-agent-chat--handle (event)
  "Show the chat EVENT in its buffer."
  (let ((buffer (gethash (plist-get event :request) org-agent-chat--in-flight)))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (pcase (plist-get event :kind)
          ('text
           (setq org-agent-chat--state "answering…"
                 org-agent-chat--streamed-chars (+ org-agent-chat--streamed-chars
                                                   (length (plist-get event :text))))
           (org-agent-chat--stream (plist-get event :text)))
          ('ask
           (setq org-agent-chat--after-tool t
                 org-agent-chat--step-start nil)
           (org-agent-chat--ask event))
          ('reasoning
           (setq org-agent-chat--state "reasoning…"
                 org-agent-chat--streamed-chars (+ org-agent-chat--streamed-chars
                                                   (length (plist-get event :text)))
                 org-agent-chat--reasoning
                 (concat org-agent-chat--reasoning (plist-get event :text))))
          ('tool
           (setq org-agent-chat--state (format "tool %s…" (plist-get event :name))
                 org-agent-chat--after-tool t
                 org-agent-chat--step-start nil)
           (org-agent-chat--insert
            (format "\n** Tool: %s (%s)\n%s%s"
                    (plist-get event :name) (plist-get event :decision)
                    (mapconcat (lambda (r) (format "- %s\n" r)) (plist-get event :reasons) "")
                    (org-agent-chat--block "src json" (plist-get event :arguments)))))
          ('tool-result
           (org-agent-chat--insert
            (concat (format "*** Result%s\n" (if (plist-get event :ok) "" " (error)"))
                    (org-agent-chat--block "example" (plist-get event :content)))))
          ('retrying
           (org-agent-chat--insert
            (format "\n- /retrying after: %s/\n" (plist-get event :message))))
          ('failover
           (org-agent-chat--failover event))
          ('notice
           (org-agent-chat--insert (format "\n- /%s/\n" (plist-get event :message))))
          ('consensus
           (org-agent-chat--insert
            (format "\n** Consensus: %d of %d agreed%s\n%s"
                    (plist-get event :agreed) (plist-get event :answered)
                    (if (plist-get event :tie) " (a tie: you decide)" "")
                    (mapconcat (lambda (p) (format "- %s\n" p))
                               (plist-get event :proposals) "")))
           (setq org-agent-chat--after-tool t
                 org-agent-chat--step-start nil))
          ('usage (org-agent-chat--usage event))
          ('done
           (org-agent-chat--finish (plist-get event :answer)))
          ('error
           (org-agent-chat--conclude
            "Error" (org-agent-chat--block "example" (concat "Error: " (plist-get event :message))))
           (org-agent-chat--finish nil))
          ('interrupted
           (org-agent-chat--conclude "Interrupted" "- /Interrupted: you stopped this turn./\n")
           (org-agent-chat--finish nil)))
        (force-mode-line-update)))))

(add-hook 'org-agent-chat-functions #'org-agent-chat--handle)

(provide 'org-agent-chat)
;;; org-agent-chat.el ends here
