;;; org-agent-bench.el --- org-agent against the Emacs way, in one run -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A benchmark command, not a test: run it with `scripts/bench', which
;; builds the release module and installs it into target/bench-module/
;; first.  Everything is measured in one Emacs process (plus one fresh
;; child process for memory), and the headline figures are RATIOS
;; (ours / the Emacs way) because the machines are noisy.
;;
;;   1. ingest throughput, module vs `org-element-parse-buffer', on the
;;      shared corpus and on a generated memex of 100,000 headlines;
;;   2. main-thread cost of a save (`org-agent--after-save') of a 1 MB
;;      and a 4 MB Org buffer;
;;   3. tag and TODO query latency at 100k headlines vs `org-map-entries';
;;   4. time to open the persisted 100k-headline store;
;;   5. resident memory of the loaded 100k-headline store;
;;   6. the chat against the test LLM server (tests/support/server.rs):
;;      C-c C-c to the request leaving, main-thread stalls and share
;;      while a 2,000-token answer streams at 100 tokens/s (watched by a
;;      Lisp thread, `org-agent-bench--stalls-start'), the Lisp garbage
;;      the turn makes, interrupt;
;;   8. hostile input (issue 9), each case in a fresh child Emacs with a
;;      time limit: 100,000 unclosed `#+begin_quote', `#+begin_src' and
;;      `:LOGBOOK:' lines, 256 KiB and 512 KiB of invalid bytes, one
;;      headline with 50,000 tags (ingested through the save path), and a
;;      store log with a long tail of zeros (opened): time, peak memory
;;      (VmHWM) and main-thread ms/MB;
;;  11. approving 20 proposals a skill's background run queued (issue
;;      13): the main-thread time of each `a' in `org-agent-approvals'
;;      (actuator edit, save, queue settle, buffer refresh, GC), on a
;;      note of a few thousand headlines, with the edits checked on disk.
;;
;; MB means 10^6 bytes throughout.  The report goes to stdout, progress
;; to stderr.  Environment knobs (defaults in parentheses):
;;   ORG_AGENT_BENCH_FILES      memex files (100)
;;   ORG_AGENT_BENCH_PER_FILE   headlines per memex file (1000)
;;   ORG_AGENT_BENCH_EVERY      org-element times every Nth file (4)
;;   ORG_AGENT_BENCH_CORPUS     corpus directory (../shared/corpus)
;;   ORG_AGENT_BENCH_KEEP       non-empty: keep the temporary directory
;;   ORG_AGENT_BENCH_ONLY       "chat": only section 6 (on the memex); "skills": only section 9;
;;                              "hostile": only section 8; "approvals": only section 11;
;;                              "store": only sections 1, 3, 4 and 5 (ingest, queries, open,
;;                              memory: the store's figures); "save": only section 2
;;                              (on the memex, ingested as a directory)
;;   ORG_AGENT_BENCH_APPROVALS_HEADLINES  memex headlines in section 11's note (3000)
;;   ORG_AGENT_BENCH_APPROVALS_RUNS       runs of section 11, a fresh queue each (3)
;;   ORG_AGENT_BENCH_HOSTILE_TIMEOUT  seconds one hostile case may take (60)
;;   ORG_AGENT_BENCH_ZEROS_MB   MB of zeros after the store log (1024)
;;   ORG_AGENT_BENCH_LLM_SERVER the test server executable (built if unset)

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'text-property-search)

(defvar org-startup-options)
(defvar org-version)
(defvar org-agent--wake-process)
(defvar org-agent-module-directory)
(defvar org-agent-state-directory)
(defvar org-agent-directories)
(defvar org-agent-backends)
(defvar org-agent-turn-finished-functions)
(defvar org-agent-chat-redisplay-interval)
(defvar org-agent-skill-directories)
(defvar org-agent-skill-import-directories)
(defvar org-agent-skill-triggered-functions)
(defvar org-agent-skill-runs-quiet)
(defvar org-agent-skill-finished-functions)
(defvar org-agent-approvals-buffer-name)
(declare-function org-agent--start "org-agent-store")
(declare-function org-agent-process-events "org-agent-store")
(declare-function org-agent-ingest-file "org-agent-store")
(declare-function org-agent-ingest-directory "org-agent-store")
(declare-function org-agent-flush "org-agent-store")
(declare-function org-agent-store-stats "org-agent-store")
(declare-function org-agent-query "org-agent-store")
(declare-function org-agent-count "org-agent-store")
(declare-function org-agent-node-get "org-agent-store")
(declare-function org-agent-node-plist "org-agent-store")
(declare-function org-agent-find "org-agent")
(declare-function org-agent--after-save "org-agent-store")
(declare-function org-agent--send-privacy "org-agent-store")
(declare-function org-agent-skills-reload "org-agent-skills")
(declare-function org-agent-skills-list "org-agent-skills")
(declare-function org-agent-skill-run "org-agent-runs")
(declare-function org-agent-approvals "org-agent-approvals")
(declare-function org-agent-approvals-list "org-agent-approvals")
(declare-function org-agent-approvals-approve-at-point "org-agent-approvals")
(declare-function org-element-parse-buffer "org-element")
(declare-function org-map-entries "org")
(declare-function org-agent-chat "org-agent-chat")
(declare-function org-agent-chat-send "org-agent-chat")
(declare-function org-agent-chat--save "org-agent-chat")
(declare-function org-agent-interrupt "org-agent-chat")
(declare-function org-agent-test-server-binary "org-agent-test-server")
(declare-function org-agent-test-server-start "org-agent-test-server")
(declare-function org-agent-test-server-stop "org-agent-test-server")
(declare-function org-agent-test-server-push "org-agent-test-server")
(declare-function org-agent-test-server-times "org-agent-test-server")
(declare-function org-agent--module-file "org-agent-build")
(declare-function org-agent--buffer-text "org-agent-store")
(declare-function org-agent--buffer-keywords "org-agent-store")
(declare-function org-agent--ingest-text-async "org-agent-module")
(declare-function org-agent--store-open "org-agent-module")
(declare-function org-agent--store-close "org-agent-module")
(declare-function org-agent--store-wait-retired "org-agent-module")
(declare-function org-agent--ingest-file "org-agent-module")
(declare-function org-agent-ingest-buffer "org-agent-store")

(defconst org-agent-bench-root
  (expand-file-name ".." (file-name-directory (or load-file-name buffer-file-name)))
  "Root of the org-agent checkout.")

(defun org-agent-bench--env-int (name default)
  "Return the integer in environment variable NAME, or DEFAULT."
  (let ((v (getenv name)))
    (if (and v (string-match-p "\\`[0-9]+\\'" v)) (max 1 (string-to-number v)) default)))

(defconst org-agent-bench-files (org-agent-bench--env-int "ORG_AGENT_BENCH_FILES" 100))
(defconst org-agent-bench-per-file (org-agent-bench--env-int "ORG_AGENT_BENCH_PER_FILE" 1000))
(defconst org-agent-bench-every (org-agent-bench--env-int "ORG_AGENT_BENCH_EVERY" 4))
(defconst org-agent-bench-corpus
  (file-name-as-directory
   (expand-file-name (or (getenv "ORG_AGENT_BENCH_CORPUS") "../shared/corpus")
                     org-agent-bench-root)))

(defvar org-agent-bench--tmp nil "Temporary directory of this run.")
(defvar org-agent-bench--results nil "Summary rows, newest first.")

;;;; Set-up

(defun org-agent-bench--setup ()
  "Load org-agent with the module installed by scripts/bench; start it.
The Elisp comes from ORG_AGENT_BENCH_ELISP, the byte-compiled copy
scripts/bench makes, else from the checkout's elisp/ as it is."
  (add-to-list 'load-path (or (getenv "ORG_AGENT_BENCH_ELISP")
                              (expand-file-name "elisp" org-agent-bench-root)))
  (setq org-agent-module-directory
        (file-name-as-directory
         (or (getenv "ORG_AGENT_BENCH_MODULE_DIR")
             (expand-file-name "target/bench-module/" org-agent-bench-root))))
  (setq org-agent-bench--tmp (make-temp-file "org-agent-bench" t))
  (setq org-agent-state-directory (expand-file-name "state-initial/" org-agent-bench--tmp))
  (setq system-time-locale "C")
  (require 'org)
  (require 'org-element)
  (require 'org-agent)
  (unless (org-agent--start)
    (error "org-agent did not start"))
  (add-hook 'org-agent-ingest-functions #'org-agent-bench--note-event))

(defun org-agent-bench--cleanup ()
  "Remove the temporary directory unless ORG_AGENT_BENCH_KEEP is set."
  (when (and org-agent-bench--tmp (file-directory-p org-agent-bench--tmp))
    (if (member (getenv "ORG_AGENT_BENCH_KEEP") '(nil ""))
        (delete-directory org-agent-bench--tmp t)
      (message "bench: kept %s" org-agent-bench--tmp))))

;;;; Measuring and printing

(defmacro org-agent-bench--time (&rest body)
  "Run BODY; return the seconds it took."
  (declare (indent 0) (debug t))
  (let ((t0 (make-symbol "t0")))
    `(let ((,t0 (current-time)))
       ,@body
       (float-time (time-since ,t0)))))

(defun org-agent-bench--median (xs)
  "Median of the numbers XS."
  (let* ((s (sort (copy-sequence xs) #'<)) (n (length s)))
    (cond ((= n 0) nil)
          ((cl-oddp n) (nth (/ n 2) s))
          (t (/ (+ (nth (1- (/ n 2)) s) (nth (/ n 2) s)) 2.0)))))

(defun org-agent-bench--div (a b)
  "A / B as a float, or nil when either is missing or B is not positive."
  (and (numberp a) (numberp b) (> b 0) (/ (float a) b)))

(defun org-agent-bench--fmt (x &optional digits)
  "X with DIGITS significant-ish decimals, or n/a."
  (cond ((null x) "n/a")
        ((integerp x) (number-to-string x))
        ((>= (abs x) 100) (format "%.0f" x))
        ((>= (abs x) 10) (format "%.1f" x))
        ((>= (abs x) 1) (format "%.2f" x))
        (t (format (format "%%.%df" (or digits 3)) x))))

(defun org-agent-bench--out (fmt &rest args)
  "Print a report line (FMT and ARGS) on stdout, flushed."
  (send-string-to-terminal (concat (apply #'format fmt args) "\n")))

(defun org-agent-bench--progress (fmt &rest args)
  "Print a progress line (FMT and ARGS) on stderr."
  (apply #'message (concat "bench: " fmt) args))

(defun org-agent-bench--row (label value unit target verdict)
  "Record a summary row."
  (push (list label value unit target verdict) org-agent-bench--results))

(defun org-agent-bench--scaled-target (headlines at-100k at-1m)
  "The target for a store of HEADLINES: AT-100K, or AT-1M above 500k headlines.
Issue 34 sets targets of its own at a million for some rows."
  (if (> headlines 500000) at-1m at-100k))

(defun org-agent-bench--verdict (value op bound)
  "PASS when VALUE OP BOUND holds, MISS when not, n/a without VALUE."
  (cond ((null value) "n/a")
        ((funcall op value bound) "PASS")
        (t "MISS")))

(defun org-agent-bench--rss-kb ()
  "VmRSS of this process in kB, from /proc/self/status (nil elsewhere)."
  (when (file-readable-p "/proc/self/status")
    (with-temp-buffer
      (insert-file-contents "/proc/self/status")
      (when (re-search-forward "^VmRSS:[ \t]+\\([0-9]+\\) kB" nil t)
        (string-to-number (match-string 1))))))

(defun org-agent-bench--size (file)
  "Size of FILE in bytes."
  (file-attribute-size (file-attributes file)))

(defun org-agent-bench--sum-sizes (files)
  "Total size of FILES in bytes."
  (apply #'+ (mapcar #'org-agent-bench--size files)))

(defun org-agent-bench--every-nth (list n)
  "Elements 0, N, 2N, ... of LIST."
  (let ((i -1))
    (seq-filter (lambda (_) (= 0 (% (cl-incf i) n))) list)))

(defun org-agent-bench--mb (bytes) (/ bytes 1e6))

;;;; Async events

(defvar org-agent-bench--done (make-hash-table) "Request id → event.")

(defun org-agent-bench--note-event (event)
  "Remember EVENT by its request id."
  (when-let ((req (plist-get event :request)))
    (puthash req event org-agent-bench--done)))

(defun org-agent-bench--wait (request &optional seconds)
  "Process events until REQUEST finished or SECONDS (default 120) passed.
Return the final event, or nil on timeout."
  (let ((deadline (+ (float-time) (or seconds 120))))
    (while (and (not (gethash request org-agent-bench--done))
                (< (float-time) deadline))
      (accept-process-output org-agent--wake-process 0.005)
      (org-agent-process-events))
    (gethash request org-agent-bench--done)))

;;;; The generated memex

(defvar org-agent-bench--rng 2463534242 "State of the xorshift32 generator.")

(defun org-agent-bench--rand (n)
  "A deterministic pseudo-random integer in [0, N)."
  (let ((x org-agent-bench--rng))
    (setq x (logand #xffffffff (logxor x (ash x 13))))
    (setq x (logxor x (ash x -17)))
    (setq x (logand #xffffffff (logxor x (ash x 5))))
    (setq org-agent-bench--rng x)
    (% (ash x -4) n)))

(defun org-agent-bench--chance (per-mille)
  "Non-nil with probability PER-MILLE / 1000."
  (< (org-agent-bench--rand 1000) per-mille))

(defun org-agent-bench--pick (vec)
  "A pseudo-random element of vector VEC."
  (aref vec (org-agent-bench--rand (length vec))))

(defconst org-agent-bench--words
  ["note" "idea" "review" "draft" "meeting" "paper" "emacs" "org" "garden" "budget"
   "call" "plan" "read" "write" "fix" "design" "summary" "report" "email" "travel"
   "book" "chapter" "module" "query" "index" "store" "thread" "agent" "rust" "lisp"
   "weekly" "quarter" "goal" "habit" "journal" "recipe" "health" "family" "music" "film"
   "server" "backup" "invoice" "taxes" "garage" "bicycle" "library" "talk" "slides" "demo"])

(defconst org-agent-bench--unicode-words
  ["café" "naïve" "Zürich" "façade" "—" "“quoted”" "日本語" "Ωmega" "crème brûlée" "smörgåsbord"])

(defconst org-agent-bench--frequent-tags
  '(("work" . 200) ("home" . 100) ("emacs" . 60) ("reading" . 40) ("@errand" . 30))
  "Frequent tags and their per-mille probability on any headline.")

(defun org-agent-bench--words (min max)
  "MIN to MAX pseudo-random words joined by spaces."
  (let ((n (+ min (org-agent-bench--rand (1+ (- max min))))) out)
    (dotimes (_ n)
      (push (if (org-agent-bench--chance 30)
                (org-agent-bench--pick org-agent-bench--unicode-words)
              (org-agent-bench--pick org-agent-bench--words))
            out))
    (string-join out " ")))

(defun org-agent-bench--uuid (n)
  "A deterministic UUID-shaped id for headline number N."
  (let ((h (md5 (format "org-agent-bench-%d" n))))
    (format "%s-%s-%s-%s-%s" (substring h 0 8) (substring h 8 12) (substring h 12 16)
            (substring h 16 20) (substring h 20 32))))

(defvar org-agent-bench--dates nil "Vector of (ACTIVE-DATE . INACTIVE-DATE-TIME) strings.")

(defun org-agent-bench--date ()
  "A pseudo-random date entry from `org-agent-bench--dates'."
  (unless org-agent-bench--dates
    (setq org-agent-bench--dates
          (let ((base (encode-time (list 0 0 12 1 1 2023 nil nil t))))
            (apply #'vector
                   (cl-loop for d below 1000
                            for time = (time-add base (* d 86400))
                            collect (cons (format-time-string "%Y-%m-%d %a" time t)
                                          (format-time-string "%Y-%m-%d %a" time t)))))))
  (org-agent-bench--pick org-agent-bench--dates))

(defun org-agent-bench--insert-headline (n level)
  "Insert memex headline number N at LEVEL."
  (let* ((r (org-agent-bench--rand 1000))
         (todo (cond ((< r 60) "TODO") ((< r 180) "DONE")))
         (tags nil))
    (dolist (ft org-agent-bench--frequent-tags)
      (when (org-agent-bench--chance (cdr ft)) (push (car ft) tags)))
    ;; ~1% of headlines each: `project' on level-1 subtrees (inherited by
    ;; their children), `urgent' on level-3 headlines (the leaves).
    (when (and (= level 1) (org-agent-bench--chance 10)) (push "project" tags))
    (when (and (= level 3) (org-agent-bench--chance 28)) (push "urgent" tags))
    (insert (make-string level ?*) " "
            (if todo (concat todo " ") "")
            (if (and (equal todo "TODO") (org-agent-bench--chance 300))
                (format "[#%c] " (+ ?A (org-agent-bench--rand 3)))
              "")
            (org-agent-bench--words 2 7)
            (if tags (concat " :" (string-join (nreverse tags) ":") ":") "")
            "\n")
    (let (planning)
      (when (equal todo "DONE")
        (push (format "CLOSED: [%s 17:%02d]" (cdr (org-agent-bench--date))
                      (org-agent-bench--rand 60))
              planning))
      (when (and todo (org-agent-bench--chance 400))
        (push (format "SCHEDULED: <%s>" (car (org-agent-bench--date))) planning))
      (when (and (equal todo "TODO") (org-agent-bench--chance 200))
        (push (format "DEADLINE: <%s>" (car (org-agent-bench--date))) planning))
      (when planning
        (insert (string-join (nreverse planning) " ") "\n")))
    (insert ":PROPERTIES:\n:ID:       " (org-agent-bench--uuid n) "\n")
    (when (org-agent-bench--chance 250)
      (insert (format ":CREATED:  [%s 09:%02d]\n" (cdr (org-agent-bench--date))
                      (org-agent-bench--rand 60))))
    (when (and todo (org-agent-bench--chance 100))
      (insert (format ":EFFORT:   %d:%02d\n" (org-agent-bench--rand 4) (* 15 (org-agent-bench--rand 4)))))
    (insert ":END:\n")
    (dotimes (_ (org-agent-bench--rand 4))
      (cond ((org-agent-bench--chance 80)
             (insert "- " (org-agent-bench--words 2 6) "\n"))
            ((org-agent-bench--chance 60)
             (insert (org-agent-bench--words 2 6)
                     (format " [[https://example.org/%s][%s]]\n"
                             (org-agent-bench--pick org-agent-bench--words)
                             (org-agent-bench--pick org-agent-bench--words))))
            (t (insert (org-agent-bench--words 6 14) ".\n"))))))

;; The outline's random walk: mostly two or three levels deep, as notes are.
(defun org-agent-bench--next-level (level)
  "The level of the memex headline after one at LEVEL (0: the first)."
  (let ((r (org-agent-bench--rand 100)))
    (pcase level
      (0 1)
      (1 (if (< r 25) 1 2))
      (2 (cond ((< r 15) 1) ((< r 55) 2) (t 3)))
      (_ (cond ((< r 15) 1) ((< r 45) 2) (t 3))))))

(defun org-agent-bench--generate-memex (dir files per-file)
  "Write FILES Org files of PER-FILE headlines each into DIR; return them, sorted."
  (make-directory dir t)
  (setq org-agent-bench--rng 2463534242)
  (let ((n 0) out)
    (dotimes (f files)
      (let ((file (expand-file-name (format "memex-%03d.org" f) dir))
            (level 0))
        (with-temp-buffer
          (set-buffer-multibyte t)
          (insert (format "#+TITLE: Memex %03d\n" f))
          (when (= 0 (% f 10)) (insert "#+FILETAGS: :ref:\n"))
          (insert "\n")
          (dotimes (_ per-file)
            (setq level (org-agent-bench--next-level level))
            (org-agent-bench--insert-headline n level)
            (cl-incf n))
          (let ((coding-system-for-write 'utf-8-unix))
            (write-region nil nil file nil 'silent)))
        (push file out)))
    (nreverse out)))

;;;; 1. Ingest throughput

(defun org-agent-bench--fresh-store (name)
  "Open a fresh, empty, persisted store in a temporary directory NAME; return it.
The store it replaces is freed first, on the thread that frees it: at
a million headlines that takes seconds, which would otherwise share
the CPUs with whatever is timed next."
  (let ((dir (file-name-as-directory (expand-file-name name org-agent-bench--tmp))))
    (make-directory dir t)
    (org-agent--store-open dir)
    (org-agent--store-wait-retired)
    dir))

(defun org-agent-bench--warm (files)
  "Read FILES once so that both sides find them in the page cache."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (dolist (f files)
      (erase-buffer)
      (insert-file-contents-literally f))))

(defun org-agent-bench--module-ingest (files)
  "Ingest FILES with FORCE; return (SECONDS NODES ERRORS PER-FILE-TIMES)."
  (garbage-collect)
  (let ((nodes 0) (errors nil) (times (make-hash-table :test #'equal)) (total 0.0))
    (dolist (f files)
      (let* ((count nil)
             (s (org-agent-bench--time
                  (condition-case err
                      (setq count (org-agent-ingest-file f t))
                    (error (push (cons f (error-message-string err)) errors))))))
        (puthash f s times)
        (setq total (+ total s))
        (when (integerp count) (cl-incf nodes count))))
    (list total nodes (nreverse errors) times)))

(defun org-agent-bench--dir-ingest (dir store-name)
  "Time `org-agent-ingest-directory' of DIR into a fresh store STORE-NAME.
This is the bulk path a user runs: files are read and parsed on
worker threads, one per core.  Return (SECONDS FINAL-EVENT)."
  (org-agent-bench--fresh-store store-name)
  (garbage-collect)
  (let ((org-agent-directories (list dir))
        (t0 (float-time))
        done)
    (org-agent-ingest-directory (lambda (e) (setq done e)))
    (while (not done) (accept-process-output nil 0.005))
    (list (- (float-time) t0) done)))

(defun org-agent-bench--element-parse (files &optional granularity)
  "Time insert-file-contents + org-mode + `org-element-parse-buffer' over FILES.
The first file is parsed once untimed first, so that loading Org's
libraries on first use is not counted.  Return (SECONDS ERRORS)."
  (let ((parse (lambda (f)
                 (with-temp-buffer
                   (let ((enable-local-variables nil)
                         (default-directory (file-name-directory f))
                         ;; "#+STARTUP: align" would realign tables: not parsing.
                         (org-startup-options (cl-remove "align" org-startup-options
                                                         :key #'car :test #'equal)))
                     (insert-file-contents f)
                     (org-mode)
                     (org-element-parse-buffer granularity)))))
        (total 0.0) errors)
    (when files (ignore-errors (funcall parse (car files))))
    (garbage-collect)
    (dolist (f files)
      (setq total
            (+ total
               (org-agent-bench--time
                 (condition-case err
                     (funcall parse f)
                   (error (push (cons f (error-message-string err)) errors)))))))
    (list total (nreverse errors))))

(defun org-agent-bench--ingest-section (title files store-name)
  "Benchmark ingest of FILES into a fresh store STORE-NAME; print under TITLE.
Return a plist of the figures."
  (let* ((bytes (org-agent-bench--sum-sizes files))
         (subset (org-agent-bench--every-nth files org-agent-bench-every))
         (subset-bytes (org-agent-bench--sum-sizes subset))
         (ratio-dir nil))
    (org-agent-bench--warm files)
    (let ((dir (org-agent-bench--fresh-store store-name)))
      (org-agent-bench--progress "%s: module ingest of %d files (%.1f MB)..."
                                 title (length files) (org-agent-bench--mb bytes))
      (pcase-let* ((`(,secs ,nodes ,errors ,times) (org-agent-bench--module-ingest files))
                   (flush-secs (org-agent-bench--time (org-agent-flush)))
                   (stats (org-agent-store-stats))
                   (sub-secs (apply #'+ (mapcar (lambda (f) (gethash f times 0.0)) subset))))
        (org-agent-bench--progress "%s: org-element on %d files (1 in %d, %.1f MB)..."
                                   title (length subset) org-agent-bench-every
                                   (org-agent-bench--mb subset-bytes))
        (pcase-let* ((`(,el-secs ,el-errors) (org-agent-bench--element-parse subset))
                     (mod-rate (org-agent-bench--div (org-agent-bench--mb bytes) secs))
                     (mod-sub-rate (org-agent-bench--div (org-agent-bench--mb subset-bytes) sub-secs))
                     (el-rate (org-agent-bench--div (org-agent-bench--mb subset-bytes) el-secs))
                     (ratio (org-agent-bench--div mod-sub-rate el-rate)))
          (org-agent-bench--out "  files %d, %.2f MB, %d nodes (%d headlines), store log %.1f MB"
                                (length files) (org-agent-bench--mb bytes) nodes
                                (plist-get stats :headlines)
                                (org-agent-bench--mb (or (plist-get stats :bytes-on-disk) 0)))
          (org-agent-bench--out "  module   org-agent-ingest-file FORCE, all files:  %7.3f s  %8s MB/s  (+ flush %.3f s)"
                                secs (org-agent-bench--fmt mod-rate) flush-secs)
          (org-agent-bench--out "  module   same, on the org-element subset:      %7.3f s  %8s MB/s"
                                sub-secs (org-agent-bench--fmt mod-sub-rate))
          (org-agent-bench--out "  emacs    insert+org-mode+org-element-parse-buffer, 1 file in %d (%d files, %.2f MB): %.3f s  %s MB/s"
                                org-agent-bench-every (length subset)
                                (org-agent-bench--mb subset-bytes) el-secs
                                (org-agent-bench--fmt el-rate))
          (org-agent-bench--out "  ratio    module / org-element, same files: %sx   (all-files module rate / org-element: %sx)"
                                (org-agent-bench--fmt ratio)
                                (org-agent-bench--fmt (org-agent-bench--div mod-rate el-rate)))
          (pcase-let* ((root (if (equal store-name "store-corpus")
                                 org-agent-bench-corpus
                               (file-name-directory (car files))))
                       (`(,dsecs ,final)
                        (progn
                          (org-agent-bench--progress "%s: directory ingest of %s..." title root)
                          (org-agent-bench--dir-ingest root (concat store-name "-dir"))))
                       ;; The directory walk skips hidden directories (.git, .archive, ...):
                       ;; count the bytes of the files it ingests.
                       (dbytes (org-agent-bench--sum-sizes
                                (seq-remove (lambda (f) (string-match-p "\\(?:\\`\\|/\\)[.#]" (file-relative-name f root)))
                                            files)))
                       (drate (org-agent-bench--div (org-agent-bench--mb dbytes) dsecs)))
            (org-agent-bench--out "  module   org-agent-ingest-directory (worker threads, %d CPUs): %7.3f s  %8s MB/s  (%d files, %.2f MB, %d nodes)"
                                  (num-processors) dsecs (org-agent-bench--fmt drate)
                                  (plist-get final :files) (org-agent-bench--mb dbytes)
                                  (plist-get final :nodes))
            (setq ratio-dir (org-agent-bench--div drate el-rate))
            (org-agent-bench--out "  ratio    directory ingest / org-element: %sx"
                                  (org-agent-bench--fmt ratio-dir)))
          (when errors
            (org-agent-bench--out "  module errors: %d, first: %S" (length errors) (car errors)))
          (when el-errors
            (org-agent-bench--out "  org-element errors: %d, first: %S" (length el-errors) (car el-errors)))
          ;; The directory ingest used a store of its own: reopen this one.
          (org-agent--store-open dir)
          (list :dir dir :bytes bytes :nodes nodes :headlines (plist-get stats :headlines)
                :mod-rate mod-rate :mod-sub-rate mod-sub-rate :el-rate el-rate :ratio ratio
                :ratio-dir ratio-dir
                :subset subset :subset-bytes subset-bytes :times times))))))

(defun org-agent-bench-ingest-corpus ()
  "Section 1a: the shared corpus."
  (org-agent-bench--out "\n== 1a. Ingest throughput: shared corpus (%s)" org-agent-bench-corpus)
  (let* ((files (and (file-directory-p org-agent-bench-corpus)
                     (sort (seq-remove (lambda (f) (string-prefix-p "." (file-name-nondirectory f)))
                                       (directory-files-recursively org-agent-bench-corpus "\\.org\\'"))
                           #'string<))))
    (cond
     ((not (file-directory-p org-agent-bench-corpus))
      (org-agent-bench--out "  skipped: %s is not there (../shared/corpus is beside this \
project's checkouts only; ORG_AGENT_BENCH_CORPUS names another folder of Org files)"
                            org-agent-bench-corpus)
      nil)
     ((null files)
      (org-agent-bench--out "  no .org files found: skipped")
      nil)
     (t
      (let ((r (org-agent-bench--ingest-section "corpus" files "store-corpus")))
        (org-agent-bench--row "1a ingest, corpus: directory ingest / org-element"
                              (plist-get r :ratio-dir) "x" ">= 80x"
                              (org-agent-bench--verdict (plist-get r :ratio-dir) #'>= 80))
        (org-agent-bench--row "1a ingest, corpus: one file at a time / org-element"
                              (plist-get r :ratio) "x" ">= 50x"
                              (org-agent-bench--verdict (plist-get r :ratio) #'>= 50))
        r)))))

(defun org-agent-bench-ingest-memex (files)
  "Section 1b: the generated memex FILES.  Leaves its store open; return the plist."
  (org-agent-bench--out "\n== 1b. Ingest throughput: generated memex (%d files x %d headlines)"
                        org-agent-bench-files org-agent-bench-per-file)
  (let* ((r (org-agent-bench--ingest-section "memex" files "store-memex"))
         (subset (plist-get r :subset))
         (times (plist-get r :times)))
    (org-agent-bench--row "1b ingest, memex: directory ingest / org-element"
                          (plist-get r :ratio-dir) "x" ">= 80x"
                          (org-agent-bench--verdict (plist-get r :ratio-dir) #'>= 80))
    (org-agent-bench--row "1b ingest, memex: one file at a time / org-element"
                          (plist-get r :ratio) "x" ">= 50x"
                          (org-agent-bench--verdict (plist-get r :ratio) #'>= 50))
    (org-agent-bench-reconcile files)
    ;; For reference: org-element at headline granularity (what the store extracts).
    (org-agent-bench--progress "memex: org-element at headline granularity on the subset...")
    (pcase-let* ((`(,secs ,_errors) (org-agent-bench--element-parse subset 'headline))
                 (rate (org-agent-bench--div (org-agent-bench--mb (plist-get r :subset-bytes)) secs))
                 (ratio (org-agent-bench--div (plist-get r :mod-sub-rate) rate)))
      (ignore times)
      (org-agent-bench--out "  (info)   org-element-parse-buffer at headline granularity, same subset: %.3f s  %s MB/s  -> module is %sx"
                            secs (org-agent-bench--fmt rate) (org-agent-bench--fmt ratio)))
    r))

(defun org-agent-bench--reconcile-pass (dir)
  "Compare the store with DIR once; return (SECONDS CALL-SECONDS EVENT).
SECONDS is from the call to the final event; CALL-SECONDS is the
main thread's share, the call itself."
  (let ((org-agent-directories (list dir))
        (t0 (float-time))
        done call)
    (setq call (org-agent-bench--time
                 (org-agent--reconcile (lambda (e) (setq done e)))))
    (while (not done) (accept-process-output nil 0.001))
    (list (- (float-time) t0) call done)))

(defun org-agent-bench-reconcile (files)
  "Section 1c: a pass comparing the store, just opened, with the memex FILES.
The store holds the memex (section 1b reopened it).  The pass runs
after every open and every `org-agent-watch-interval' seconds."
  (let* ((dir (file-name-directory (car files)))
         (file (car files))
         (text (with-temp-buffer
                 (set-buffer-multibyte nil)
                 (insert-file-contents-literally file)
                 (buffer-string)))
         (write (lambda (bytes)
                  (let ((coding-system-for-write 'no-conversion))
                    (write-region bytes nil file nil 'silent))))
         (first (org-agent-bench--reconcile-pass dir))
         (passes (cl-loop repeat 10 collect (org-agent-bench--reconcile-pass dir)))
         (ms (* 1000 (org-agent-bench--median (mapcar #'car passes))))
         (call-ms (* 1000 (org-agent-bench--median (mapcar #'cadr passes))))
         touched changed)
    (org-agent-bench--out "
== 1c. The store compared with the disk (%d files, %d headlines), nothing changed"
                          (length files) (plist-get (org-agent-store-stats) :headlines))
    (org-agent-bench--out "  first pass after the open: %s ms (%S)"
                          (org-agent-bench--fmt (* 1000 (car first))) (nth 2 first))
    (org-agent-bench--out "  pass, nothing changed: median %s ms of 10, call to final event (min %s, max %s); main thread: median %s ms (the call)"
                          (org-agent-bench--fmt ms)
                          (org-agent-bench--fmt (* 1000 (apply #'min (mapcar #'car passes))))
                          (org-agent-bench--fmt (* 1000 (apply #'max (mapcar #'car passes))))
                          (org-agent-bench--fmt call-ms))
    ;; One file rewritten with the same text (a sync tool touching it): read and hashed.
    (sleep-for 0.01)
    (funcall write text)
    (setq touched (org-agent-bench--reconcile-pass dir))
    ;; One file changed (a pull): read, parsed, stored; then put back as it was.
    (funcall write (concat text "* Added by the benchmark
"))
    (setq changed (org-agent-bench--reconcile-pass dir))
    (funcall write text)
    (org-agent-bench--reconcile-pass dir)
    (org-agent-bench--out "  one file touched (same text, read and hashed): %s ms; one file changed (parsed, stored): %s ms"
                          (org-agent-bench--fmt (* 1000 (car touched)))
                          (org-agent-bench--fmt (* 1000 (car changed))))
    (org-agent-bench--row "1c compare store with disk, nothing changed, median of 10"
                          ms "ms" "(info)" "info")
    (org-agent-bench--row "1c same, main-thread share (the call)"
                          call-ms "ms" "(info)" "info")))

;;;; 3. Queries

(defun org-agent-bench--repeat (n fn)
  "Call FN N times; return the list of per-call seconds and FN's last value."
  (let (times value)
    (dotimes (_ n)
      (push (org-agent-bench--time (setq value (funcall fn))) times))
    (cons times value)))

(defun org-agent-bench--map-entries (buffers match)
  "Run `org-map-entries' with MATCH over BUFFERS; return the match count."
  (let ((n 0))
    (dolist (b buffers)
      (with-current-buffer b
        (cl-incf n (length (org-map-entries #'ignore match 'file)))))
    n))

(defun org-agent-bench--repeat-no-gc (n fn)
  "Like `org-agent-bench--repeat', deferring garbage collection in each call.
Collect garbage between calls (untimed) every few calls instead."
  (let (times value)
    (dotimes (i n)
      (when (= 0 (% i 10)) (garbage-collect))
      (let ((gc-cons-threshold most-positive-fixnum))
        (push (org-agent-bench--time (setq value (funcall fn))) times)))
    (garbage-collect)
    (cons times value)))

(defun org-agent-bench-queries (files headlines)
  "Section 3: query latency over the memex FILES (HEADLINES headlines)."
  (org-agent-bench--out "\n== 3. Query latency at %d headlines (store holds the memex)" headlines)
  (org-agent-bench--progress "queries: opening %d memex files in org-mode buffers..." (length files))
  (let* (buffers
         (open-secs (org-agent-bench--time
                      (let ((enable-local-variables nil))
                        (setq buffers (mapcar #'find-file-noselect files)))))
         (queries `(("tag urgent" (:tag "urgent") "urgent")
                    ("tag project" (:tag "project") "project")
                    ("todo TODO" (:todo "TODO") "/TODO"))))
    (org-agent-bench--out "  (opening the %d files in org-mode buffers took %.1f s; not counted below)"
                          (length files) open-secs)
    (org-agent-bench--out "  %-11s %6s %6s | %9s %6s %9s | %8s | %10s | %8s %8s"
                          "query" "store" "emacs" "query ms" "GCs" "no-GC ms" "count ms"
                          "org-map ms" "x query" "x count")
    (dolist (q queries)
      (pcase-let* ((`(,label ,plist ,match) q))
        (org-agent-bench--progress "queries: %s..." label)
        (garbage-collect)
        (let* ((count-run (org-agent-bench--repeat 300 (lambda () (apply #'org-agent-count plist))))
               (query-runs (if (> (cdr count-run) 5000) 30 100))
               (gcs0 (progn (garbage-collect) gcs-done))
               (gc-secs0 gc-elapsed)
               (query-run (org-agent-bench--repeat query-runs (lambda () (apply #'org-agent-query plist))))
               (gcs (/ (float (- gcs-done gcs0)) query-runs))
               (gc-ms (/ (* 1000 (- gc-elapsed gc-secs0)) query-runs))
               (nogc-run (org-agent-bench--repeat-no-gc query-runs (lambda () (apply #'org-agent-query plist))))
               (ids-run (org-agent-bench--repeat query-runs
                                                 (lambda () (apply #'org-agent-query (append plist '(:fields (:id)))))))
               (map-times nil) (map-count nil))
          (dotimes (_ 3)
            (garbage-collect)
            (push (org-agent-bench--time (setq map-count (org-agent-bench--map-entries buffers match)))
                  map-times))
          (let* ((q-ms (* 1000 (org-agent-bench--median (car query-run))))
                 (amortized-ms (* 1000 (/ (apply #'+ (car query-run)) (length (car query-run)))))
                 (n-ms (* 1000 (org-agent-bench--median (car nogc-run))))
                 (c-ms (* 1000 (org-agent-bench--median (car count-run))))
                 (m-ms (* 1000 (org-agent-bench--median map-times)))
                 (hits (length (cdr query-run))))
            (org-agent-bench--out "  %-11s %6d %6d | %9s %6.1f %9s | %8s | %10s | %8s %8s%s"
                                  label hits map-count
                                  (org-agent-bench--fmt q-ms) gcs (org-agent-bench--fmt n-ms)
                                  (org-agent-bench--fmt c-ms)
                                  (org-agent-bench--fmt m-ms)
                                  (org-agent-bench--fmt (org-agent-bench--div m-ms q-ms))
                                  (org-agent-bench--fmt (org-agent-bench--div m-ms c-ms))
                                  (cond ((/= hits (cdr count-run)) "  QUERY/COUNT DISAGREE")
                                        ((/= hits map-count) "  COUNTS DIFFER")
                                        (t "")))
            (org-agent-bench--out "  %-11s %13s | GC %s ms per query call on average; %s us per returned node without GC"
                                  "" "" (org-agent-bench--fmt gc-ms)
                                  (org-agent-bench--fmt (org-agent-bench--div (* 1000 n-ms) hits)))
            ;; Full plists, `org-agent-query's default: issue 34 holds them to 20 ms per
            ;; 1,000 nodes, the GC they cause included (`:lazy' records to 5 ms, row 3b).
            ;; The GC a call causes is its share of the collections its garbage brings
            ;; on: the mean over the calls, as row 3b measures it.  A median is either a
            ;; call a whole collection landed in or one none did, so it is shown beside.
            ;; Only counts are held to 1 ms; the other forms are shown for comparison.
            (let ((limit (* 20.0 (/ hits 1000.0))))
              (org-agent-bench--row (format "3  org-agent-query %s (%d hits), plists+GC, amortized" label hits)
                                    amortized-ms "ms" (format "<= %s ms" (org-agent-bench--fmt limit))
                                    (org-agent-bench--verdict amortized-ms #'<= limit)))
            (org-agent-bench--row (format "3  org-agent-query %s, plists, median" label)
                                  q-ms "ms" "(info)" "info")
            (org-agent-bench--row (format "3  org-agent-query %s, GC deferred, median" label)
                                  n-ms "ms" "(info)" "info")
            (org-agent-bench--row (format "3  org-agent-query %s :fields (:id), median" label)
                                  (* 1000 (org-agent-bench--median (car ids-run))) "ms" "(info)" "info")
            (org-agent-bench--row (format "3  org-agent-count %s, median" label)
                                  c-ms "ms" "<= 1 ms" (org-agent-bench--verdict c-ms #'<= 1.0))
            (org-agent-bench--row (format "3  org-map-entries / org-agent-query, %s" label)
                                  (org-agent-bench--div m-ms q-ms) "x" "(info)" "info")))))
    (org-agent-bench--out "  store/emacs: matches found by the store and by org-map-entries (must agree).")
    (org-agent-bench--out "  query ms: median per call with Emacs' GC settings (gc-cons-threshold %d), GCs: collections per call;"
                          gc-cons-threshold)
    (org-agent-bench--out "  no-GC ms: the same with GC deferred during the call; count ms: org-agent-count (no plists).")
    (org-agent-bench--out "  org-map ms: median of 3 passes of org-map-entries over all %d buffers ('file scope); x: org-map / ours."
                          (length buffers))
    (org-agent-bench--out "  %.1f%% of headlines are TODO; tag matches include inherited tags on both sides."
                          (* 100.0 (or (org-agent-bench--div (org-agent-count :todo "TODO") headlines) 0)))
    (org-agent-bench-query-garbage)
    (org-agent-bench-find headlines)
    (dolist (b buffers) (kill-buffer b))))

(defun org-agent-bench--amortized (n fn)
  "Call FN N times; return (MS GCS GC-MS BYTES VALUE), each per call.
VALUE is FN's last value.  The time per call includes the garbage
collections the calls caused, under the session's own
`gc-cons-threshold': total time over N."
  (garbage-collect)
  (let ((gcs0 gcs-done) (gc0 gc-elapsed) (bytes0 (org-agent-bench--consed)) value
        (t0 (current-time)))
    (dotimes (_ n) (setq value (funcall fn)))
    (let ((secs (float-time (time-since t0))))
      (list (/ (* 1000 secs) n) (/ (float (- gcs-done gcs0)) n)
            (/ (* 1000 (- gc-elapsed gc0)) n)
            (/ (float (- (org-agent-bench--consed) bytes0)) n)
            value))))

(defun org-agent-bench-query-garbage ()
  "Section 3b: 1,000 whole nodes from a query, with the GC they cause."
  (org-agent-bench--progress "queries: 1,000 nodes with their GC...")
  (org-agent-bench--out "\n  -- 3b. A query returning 1,000 whole nodes, GC included (amortized over 100 calls,")
  (org-agent-bench--out "         gc-cons-threshold %d; query (:tag \"urgent\" :limit 1000))" gc-cons-threshold)
  (org-agent-bench--out "  %-40s %9s %6s %9s %12s" "form" "ms/call" "GCs" "GC ms" "bytes/call")
  (let ((q '(:tag "urgent" :limit 1000))
        (forms
         `(("plists (every field)" plist
            ,(lambda (q) (apply #'org-agent-query q)))
           ("records (:lazy t), fields on demand" lazy
            ,(lambda (q) (apply #'org-agent-query :lazy t q)))
           ("records, then :title of each" lazy-title
            ,(lambda (q) (let ((nodes (apply #'org-agent-query :lazy t q)))
                           (dolist (n nodes) (org-agent-node-get n :title))
                           nodes)))
           ("records, then every field of each" lazy-all
            ,(lambda (q) (let ((nodes (apply #'org-agent-query :lazy t q)))
                           (dolist (n nodes) (org-agent-node-plist n))
                           nodes))))))
    (dolist (f forms)
      (pcase-let* ((`(,label ,key ,fn) f)
                   (`(,ms ,gcs ,gc-ms ,bytes ,value)
                    (org-agent-bench--amortized 100 (lambda () (funcall fn q)))))
        (org-agent-bench--out "  %-40s %9s %6.2f %9s %12.0f%s" label (org-agent-bench--fmt ms) gcs
                              (org-agent-bench--fmt gc-ms) bytes
                              (if (= (length value) 1000) "" (format "  (%d nodes!)" (length value))))
        (pcase key
          ;; Issue 34 decided: plists stay the default for `plist-get' callers at this row;
          ;; records (:lazy) are the fast form, held to 5 ms.
          ('plist (org-agent-bench--row "3b query 1,000 nodes as plists, incl. GC (amortized)"
                                        ms "ms" "<= 20 ms" (org-agent-bench--verdict ms #'<= 20.0)))
          ('lazy (org-agent-bench--row "3b query 1,000 nodes as records (:lazy), incl. GC (amortized)"
                                       ms "ms" "<= 5 ms" (org-agent-bench--verdict ms #'<= 5.0)))
          ('lazy-title (org-agent-bench--row "3b same, then :title of each record, incl. GC"
                                             ms "ms" "(info)" "info"))
          ('lazy-all (org-agent-bench--row "3b same, then every field of each record, incl. GC"
                                           ms "ms" "(info)" "info")))))))

(defun org-agent-bench--median-ms (n fn)
  "Call FN N times, each after a full GC; return (MEDIAN-MS VALUE).
VALUE is FN's last value."
  (let (times value)
    (dotimes (_ n)
      (garbage-collect)
      (let ((t0 (current-time)))
        (setq value (funcall fn))
        (push (* 1000 (float-time (time-since t0))) times)))
    (list (org-agent-bench--median times) value)))

(defun org-agent-bench-find (headlines)
  "Section 3c: `org-agent-find' at HEADLINES headlines, ready to type in.
Then what the category's style answers to typed words, and, as the
cost the style avoids, every candidate made as a Lisp string."
  (org-agent-bench--progress "queries: org-agent-find...")
  (let (entered collection ready completions)
    (cl-flet ((stop (&rest args)
                (setq entered (current-time) collection (nth 1 args))
                (throw 'org-agent-bench-find nil)))
      (advice-add 'completing-read :override #'stop)
      (unwind-protect
          (dotimes (_ 5)
            (garbage-collect)
            (let ((t0 (current-time)))
              (catch 'org-agent-bench-find (org-agent-find))
              (push (* 1000 (float-time (time-subtract entered t0))) ready))
            (let ((t1 (current-time)) (n (length (all-completions "" collection))))
              (push (* 1000 (float-time (time-since t1))) completions)
              (unless (= n headlines)
                (org-agent-bench--out "  WARNING: org-agent-find offered %d candidates, expected %d"
                                      n headlines))))
        (advice-remove 'completing-read #'stop)))
    (let ((ms (org-agent-bench--median ready))
          (all-ms (org-agent-bench--median completions))
          ;; The target scales with the store: issue 34 asks for 500 ms at a million.
          (target (org-agent-bench--scaled-target headlines 150 500))
          (typed (mapcar (lambda (input)
                           (cons input
                                 (org-agent-bench--median-ms
                                  5 (lambda ()
                                      (let ((all (completion-all-completions
                                                  input collection nil (length input))))
                                        (if all (progn (setcdr (last all) nil) (length all)) 0))))))
                         '("garden" "garden budget")))
          (before (car (org-agent-bench--median-ms
                        5 (lambda () (org-agent--headline-candidates) (garbage-collect))))))
      (org-agent-bench--out "\n  -- 3c. M-x org-agent-find at %d headlines: ready to type in (completing-read entered)" headlines)
      (org-agent-bench--out "  ready: median %s ms of 5 (min %s, max %s), GC included; then (all-completions \"\") over the"
                            (org-agent-bench--fmt ms) (org-agent-bench--fmt (apply #'min ready))
                            (org-agent-bench--fmt (apply #'max ready)))
      (org-agent-bench--out "  table, what a UI asking for every candidate gets (the full list, made then): median %s ms"
                            (org-agent-bench--fmt all-ms))
      (dolist (ty typed)
        (org-agent-bench--out "  typed %-16S the style's answer (completion-all-completions, module match, highlight): median %s ms, %d matches"
                              (car ty) (org-agent-bench--fmt (nth 1 ty)) (nth 2 ty)))
      (org-agent-bench--out "  before issue 34 the command made every candidate before the minibuffer opened; that, with")
      (org-agent-bench--out "  the GC it causes (org-agent--headline-candidates, garbage-collect): median %s ms"
                            (org-agent-bench--fmt before))
      (org-agent-bench--row "3c org-agent-find ready to type in, median of 5"
                            ms "ms" (format "<= %d ms" target) (org-agent-bench--verdict ms #'<= target))
      (dolist (ty typed)
        (org-agent-bench--row (format "3c org-agent-find, style's answer to %S, median" (car ty))
                              (nth 1 ty) "ms" "(info)" "info"))
      (org-agent-bench--row "3c org-agent-find, then all-completions \"\", median"
                            all-ms "ms" "(info)" "info")
      (org-agent-bench--row "3c every candidate made up front + its GC (the old way), median"
                            before "ms" "(info)" "info"))))

;;;; 4. Store open

(defun org-agent-bench-store-open (dir nodes)
  "Section 4: time `org-agent--store-open' on the store in DIR (NODES nodes)."
  (org-agent-bench--out "\n== 4. Opening the persisted store (%s nodes, log %.1f MB)"
                        nodes (org-agent-bench--mb (or (org-agent-bench--size (expand-file-name "store.log" dir)) 0)))
  (org-agent-flush)
  (let (times close-times index-times settled-times report)
    (dotimes (_ 5)
      ;; Close the loaded store first, so that only the load is timed.
      (push (org-agent-bench--time (org-agent--store-close)) close-times)
      (garbage-collect)
      (push (org-agent-bench--time (setq report (org-agent--store-open dir))) times)
      ;; The id index is built on a thread of its own after the open returns; the stats
      ;; wait for it, so the next round starts with nothing of this one still running.
      (push (org-agent-bench--time (org-agent-store-stats)) index-times))
    ;; The same, once the closed store has been dropped: closing hands it to a thread of
    ;; its own, which otherwise shares the CPUs with the open that follows.
    (dotimes (_ 3)
      (org-agent--store-close)
      (org-agent--store-wait-retired)
      (garbage-collect)
      (push (org-agent-bench--time (org-agent--store-open dir)) settled-times)
      (org-agent-store-stats))
    (org-agent-bench--out "  (info) org-agent--store-close of the loaded store: median %s ms (the store is dropped on a thread of its own, during the open that follows)"
                          (org-agent-bench--fmt (* 1000 (org-agent-bench--median close-times))))
    (org-agent-bench--out "  (info) open once the closed store was dropped: median %s ms of 3"
                          (org-agent-bench--fmt (* 1000 (org-agent-bench--median settled-times))))
    (org-agent-bench--out "  (info) then the id index (built off the main thread) was ready: median %s ms after the open returned"
                          (org-agent-bench--fmt (* 1000 (org-agent-bench--median index-times))))
    (let ((ms (* 1000 (org-agent-bench--median times))))
      (org-agent-bench--out "  org-agent--store-open: median %s ms of 5 (min %s, max %s); reported %S"
                            (org-agent-bench--fmt ms)
                            (org-agent-bench--fmt (* 1000 (apply #'min times)))
                            (org-agent-bench--fmt (* 1000 (apply #'max times)))
                            report)
      (unless (eql (plist-get report :nodes) nodes)
        (org-agent-bench--out "  WARNING: the reopened store has %S nodes, expected %S"
                              (plist-get report :nodes) nodes))
      ;; Issue 34 asks for 1 s at a million.
      (let ((target (org-agent-bench--scaled-target nodes 150 1000)))
        (org-agent-bench--row "4  open persisted store again (org-agent--store-open), median of 5"
                              ms "ms" (format "<= %d ms" target)
                              (org-agent-bench--verdict ms #'<= target))))))

;;;; 5. Memory (fresh child process)

(defun org-agent-bench-child-open (dir)
  "In a fresh Emacs: measure RSS around opening the store in DIR; print it."
  (org-agent-bench--setup)
  (unwind-protect
      (progn
        (garbage-collect)
        (let* ((before (org-agent-bench--rss-kb))
               (report nil)
               (secs (org-agent-bench--time (setq report (org-agent--store-open dir))))
               ;; The stats wait for the id index the open left building on a thread of
               ;; its own: resident memory is measured with it in.
               (stats nil)
               (index-secs (org-agent-bench--time (setq stats (org-agent-store-stats))))
               (after (org-agent-bench--rss-kb))
               (headlines (plist-get stats :headlines))
               (count-secs (org-agent-bench--time (org-agent-count :tag "urgent")))
               (after-query (org-agent-bench--rss-kb)))
          (princ (format "ORG-AGENT-BENCH-CHILD %S\n"
                         (list :rss-before before :rss-after after :rss-after-query after-query
                               :open-secs secs :index-secs index-secs :count-secs count-secs
                               :nodes (plist-get report :nodes) :headlines headlines)))))
    (org-agent--store-close)
    (org-agent-bench--cleanup)))

(defun org-agent-bench-child-ingest (notes)
  "In a fresh Emacs: measure RSS around a directory ingest of NOTES; print it.
The ingest goes to a fresh store, as a user's first one does."
  (org-agent-bench--setup)
  (unwind-protect
      (let ((state (expand-file-name "state-ingest/" org-agent-bench--tmp))
            (org-agent-directories (list notes))
            done)
        (org-agent--store-open state)
        (garbage-collect)
        (let* ((before (org-agent-bench--rss-kb))
               (secs (org-agent-bench--time
                       (org-agent-ingest-directory (lambda (e) (setq done e)))
                       (while (not done) (accept-process-output nil 0.005))))
               (stats (progn (org-agent-flush) (org-agent-store-stats)))
               (after (org-agent-bench--rss-kb)))
          (princ (format "ORG-AGENT-BENCH-CHILD %S\n"
                         (list :rss-before before :rss-after after :ingest-secs secs
                               :headlines (plist-get stats :headlines))))))
    (org-agent--store-close)
    (org-agent-bench--cleanup)))

(defun org-agent-bench--child (form)
  "Evaluate FORM, a string, in a fresh Emacs with the bench loaded.
FORM prints a plist after ORG-AGENT-BENCH-CHILD on a line of its own;
return that plist."
  (let ((emacs (expand-file-name invocation-name invocation-directory)))
    (with-temp-buffer
      (let ((process-environment (cons (concat "ORG_AGENT_BENCH_MODULE_DIR="
                                               org-agent-module-directory)
                                       process-environment)))
        (call-process emacs nil (list t nil) nil "-Q" "--batch"
                      "-l" (expand-file-name "bench/org-agent-bench.el" org-agent-bench-root)
                      "--eval" form))
      (goto-char (point-min))
      (and (re-search-forward "^ORG-AGENT-BENCH-CHILD \\(.*\\)$" nil t)
           (car (read-from-string (match-string 1)))))))

(defun org-agent-bench-memory (dir headlines)
  "Section 5 (and startup time): fresh Emacs processes open the store DIR.
HEADLINES is how many headlines it holds."
  (org-agent-bench--out "\n== 5. Startup: fresh emacs -Q --batch processes open the store (3 runs)")
  (org-agent-flush)
  (org-agent--store-close)              ; nothing of ours touches DIR meanwhile
  ;; Closing frees the store on a thread of its own, for a few hundred ms: a fresh Emacs
  ;; at startup has no such neighbour on its CPUs.
  (org-agent--store-wait-retired)
  (let (outs)
    (dotimes (i 3)
      (org-agent-bench--progress "memory: child process %d of 3 opens the store..." (1+ i))
      (let ((out (org-agent-bench--child (format "(org-agent-bench-child-open %S)" dir))))
        (if (not out)
            (org-agent-bench--out "  child %d reported nothing" (1+ i))
          (push out outs)
          (org-agent-bench--out "  child %d: VmRSS %s MB before, %s MB after org-agent--store-open and its id index (+%s MB), %s MB after a query; open took %s ms, the index was ready %s ms later; %S nodes, %S headlines"
                                (1+ i)
                                (org-agent-bench--fmt (/ (plist-get out :rss-before) 1024.0))
                                (org-agent-bench--fmt (/ (plist-get out :rss-after) 1024.0))
                                (org-agent-bench--fmt (/ (- (plist-get out :rss-after) (plist-get out :rss-before)) 1024.0))
                                (org-agent-bench--fmt (/ (plist-get out :rss-after-query) 1024.0))
                                (org-agent-bench--fmt (* 1000 (plist-get out :open-secs)))
                                (org-agent-bench--fmt (* 1000 (plist-get out :index-secs)))
                                (plist-get out :nodes) (plist-get out :headlines)))))
    (let* ((deltas (mapcar (lambda (o) (/ (- (plist-get o :rss-after) (plist-get o :rss-before)) 1024.0)) outs))
           (delta (org-agent-bench--median deltas))
           (per-100k (and delta (org-agent-bench--div (* delta 100000) headlines)))
           (open-ms (and outs (* 1000 (org-agent-bench--median
                                       (mapcar (lambda (o) (plist-get o :open-secs)) outs))))))
      (org-agent-bench--out "  => first open in a fresh process: median %s ms; resident memory: median +%s MB = %s MB per 100k headlines"
                            (org-agent-bench--fmt open-ms) (org-agent-bench--fmt delta)
                            (org-agent-bench--fmt per-100k))
      (org-agent-bench--out "     (delta VmRSS from before org-agent--store-open to after its id index is built; includes malloc slack left by loading)")
      (let ((target (org-agent-bench--scaled-target headlines 150 1000)))
        (org-agent-bench--row "4  first open in a fresh Emacs (startup), median of 3"
                              open-ms "ms" (format "<= %d ms" target)
                              (org-agent-bench--verdict open-ms #'<= target)))
      ;; What a user's first ingest leaves. `org-agent-flush' waits for the reload from the
      ;; log that a large ingest is followed by, which leaves the bodies in the log.
      (org-agent-bench--progress "memory: a child process ingests the memex directory...")
      (let* ((notes (expand-file-name "memex/" org-agent-bench--tmp))
             (out (org-agent-bench--child (format "(org-agent-bench-child-ingest %S)" notes)))
             (mb (and out (/ (- (plist-get out :rss-after) (plist-get out :rss-before)) 1024.0)))
             (ingest-per-100k
              (and mb (org-agent-bench--div (* mb 100000) (plist-get out :headlines)))))
        (if (not out)
            (org-agent-bench--out "  child 4 (directory ingest) reported nothing")
          (org-agent-bench--out "  child 4: directory ingest of %s into a fresh store: VmRSS +%s MB in %s s, %S headlines"
                                notes (org-agent-bench--fmt mb)
                                (org-agent-bench--fmt (plist-get out :ingest-secs))
                                (plist-get out :headlines)))
        (org-agent-bench--row "5  resident memory after a first directory ingest, per 100k"
                              ingest-per-100k "MB" "<= 60 MB"
                              (if ingest-per-100k
                                  (org-agent-bench--verdict ingest-per-100k #'<= 60)
                                "n/a")))
      (org-agent-bench--row "5  resident memory per 100k headlines (delta VmRSS)"
                            per-100k "MB" "<= 60 MB"
                            (if per-100k (org-agent-bench--verdict per-100k #'<= 60) "n/a"))))
  (org-agent--store-open dir))

;;;; 2. Save

(defun org-agent-bench--save-text (files bytes)
  "Text of memex FILES concatenated (whole headlines) up to about BYTES bytes."
  (with-temp-buffer
    (dolist (f files)
      (when (< (position-bytes (point-max)) bytes)
        (save-excursion
          (goto-char (point-max))
          (insert-file-contents f))))
    ;; Cut at the first headline past BYTES, so the text ends with whole entries.
    (goto-char (or (byte-to-position (min bytes (1- (position-bytes (point-max))))) (point-max)))
    (when (re-search-forward "^\\* " nil t)
      (delete-region (match-beginning 0) (point-max)))
    (buffer-string)))

(defun org-agent-bench--save-one (label text runs)
  "Measure the main-thread cost of saving TEXT in an Org file buffer RUNS times."
  (let* ((file (expand-file-name (format "save-%s.org" label) org-agent-bench--tmp))
         (coding-system-for-write 'utf-8-unix))
    (with-temp-file file (insert text))
    (let* ((bytes (org-agent-bench--size file))
           (mb (org-agent-bench--mb bytes))
           (buf (let ((enable-local-variables nil)) (find-file-noselect file)))
           hook-times nogc-times gc-times copy-times kw-times call-times latencies gcs (bad nil))
      (with-current-buffer buf
        (dotimes (i (* 2 runs))
          (goto-char (point-max))
          (insert (format "\n* Edit %d of the benchmark\n" i))
          (garbage-collect)
          (let ((gc0 gcs-done) (gc-secs0 gc-elapsed) (t0 (current-time)) request)
            (if (cl-evenp i)
                ;; What the save hook costs, as a whole.
                (let ((secs (org-agent-bench--time (setq request (org-agent--after-save))))
                      (gc-secs (- gc-elapsed gc-secs0)))
                  (push secs hook-times)
                  (push gc-secs gc-times)
                  (push (- secs gc-secs) nogc-times)
                  (push (- gcs-done gc0) gcs))
              ;; The same steps one by one (mirrors `org-agent-ingest-buffer').
              ;; Each step's time excludes the GC that ran inside it.
              (let (text kws)
                (cl-macrolet ((step (var form)
                                `(let* ((g gc-elapsed)
                                        (s (org-agent-bench--time ,form)))
                                   (push (- s (- gc-elapsed g)) ,var))))
                  (step copy-times (setq text (org-agent--buffer-text)))
                  (step kw-times (setq kws (org-agent--buffer-keywords)))
                  (step call-times
                        (setq request (org-agent--ingest-text-async
                                       (expand-file-name buffer-file-name) text
                                       (car kws) (cadr kws)))))))
            (if (not (integerp request))
                (setq bad request)
              (let ((event (org-agent-bench--wait request)))
                (push (float-time (time-since t0)) latencies)
                (unless (memq (plist-get event :type) '(ingested superseded))
                  (setq bad (or event 'timeout))))))))
      (kill-buffer buf)
      (let* ((ms (* 1000 (org-agent-bench--median hook-times)))
             (per-mb (org-agent-bench--div ms mb))
             (nogc-ms (* 1000 (org-agent-bench--median nogc-times)))
             (nogc-per-mb (org-agent-bench--div nogc-ms mb)))
        (org-agent-bench--out "  %s buffer (%.2f MB, %d chars): org-agent--after-save median %s ms = %s ms/MB  (min %s, max %s ms; %d runs)"
                              label mb (length text) (org-agent-bench--fmt ms) (org-agent-bench--fmt per-mb)
                              (org-agent-bench--fmt (* 1000 (apply #'min hook-times)))
                              (org-agent-bench--fmt (* 1000 (apply #'max hook-times)))
                              runs)
        (org-agent-bench--out "     of which GC: median %s ms (%d collections in %d runs); without GC: median %s ms = %s ms/MB"
                              (org-agent-bench--fmt (* 1000 (org-agent-bench--median gc-times)))
                              (apply #'+ gcs) runs
                              (org-agent-bench--fmt nogc-ms) (org-agent-bench--fmt nogc-per-mb))
        (org-agent-bench--out "     breakdown (medians of separate runs, GC excluded): buffer-substring %s ms, keywords %s ms, module call (copy into Rust + hand over) %s ms"
                              (org-agent-bench--fmt (* 1000 (org-agent-bench--median copy-times)))
                              (org-agent-bench--fmt (* 1000 (org-agent-bench--median kw-times)) 4)
                              (org-agent-bench--fmt (* 1000 (org-agent-bench--median call-times))))
        (org-agent-bench--out "     (info) until the worker's ingest event arrived: median %s ms"
                              (org-agent-bench--fmt (* 1000 (org-agent-bench--median latencies))))
        (when bad
          (org-agent-bench--out "     PROBLEM: %S" bad))
        (when (equal label "1MB")
          ;; Issue 34: whatever the GC does, so the verdict is on the worst save.
          (let ((worst (* 1000 (apply #'max hook-times))))
            (org-agent-bench--row (format "2  a save of a 1 MB Org file: main-thread cost (median; max %s ms of %d saves)"
                                          (org-agent-bench--fmt worst) runs)
                                  ms "ms" "<= 1 ms, max too"
                                  (if bad "FAIL" (org-agent-bench--verdict worst #'<= 1)))))
        (org-agent-bench--row (format "2  save %s: main-thread ms per MB (median %s ms)" label
                                      (org-agent-bench--fmt ms))
                              per-mb "ms/MB" "<= 10 ms/MB"
                              (if bad "FAIL" (org-agent-bench--verdict per-mb #'<= 10)))
        (org-agent-bench--row (format "2  save %s: same, without the GC it triggers" label)
                              nogc-per-mb "ms/MB" "<= 10 ms/MB"
                              (if bad "FAIL" (org-agent-bench--verdict nogc-per-mb #'<= 10)))))))

(defun org-agent-bench-save (memex-files)
  "Section 2: main-thread cost of a save, on text taken from MEMEX-FILES."
  (org-agent-bench--out "\n== 2. Main-thread cost of saving an Org buffer (store with the memex open)")
  (org-agent-bench--progress "save: 1 MB and 4 MB buffers...")
  (org-agent-bench--save-one "1MB" (org-agent-bench--save-text memex-files 1000000) 20)
  (org-agent-bench--save-one "4MB" (org-agent-bench--save-text memex-files 4000000) 7))

;;;; 9. Skills: loading them, and what a save costs when they listen

(defun org-agent-bench--skill-text (n trigger)
  "Skill N with the TRIGGER properties, a gate rule and a gate test."
  (format "#+SKILL_NAME: bench-%d
#+DESCRIPTION: Use for the chores of area %d: reviews, projects and their tasks.
* Trigger
:PROPERTIES:
%s
:END:
* Prompt
Do the chores of area %d.
* Gate
| action   | condition                    | decision | reason                   |
| set_todo | state=DONE & open-children>0 | deny     | close its children first |
* Tests
** closing an open project is denied :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Project
:ARGS: state=DONE
:EXPECT: deny
:END:
#+begin_example
,* TODO Project
,** TODO Step
#+end_example
" n n trigger n))

(defun org-agent-bench--write-skills (dir count extra)
  "Write COUNT skills into DIR that no save of the bench fires; EXTRA: one more.
The extra one fires on saves of skills-save-fires.org.  Of the COUNT,
a fifth listens to saves of another file, a fifth to TODO changes of
DONE projects, the rest to schedules, intervals or the model."
  (make-directory dir t)
  (dotimes (n count)
    (with-temp-file (expand-file-name (format "bench-%d.skill.org" n) dir)
      (insert (org-agent-bench--skill-text
               n (pcase (% n 5)
                   (0 ":ON: model save\n:PATHS: elsewhere-*.org")
                   (1 ":ON: model todo-change\n:MATCH: +project/DONE")
                   (2 (format ":ON: model cron\n:SCHEDULE: %d 3 * * SUN" (% n 60)))
                   (3 ":ON: model every\n:EVERY: 1d")
                   (_ ":ON: model user"))))))
  (when extra
    (with-temp-file (expand-file-name "bench-fires.skill.org" dir)
      (insert (org-agent-bench--skill-text count ":ON: save\n:PATHS: skills-save-fires.org")))))

(defun org-agent-bench--load-skills (dir extra)
  "Load 50 skills (and EXTRA) from DIR; return the seconds it took, as Emacs waits."
  (delete-directory dir t)
  (org-agent-bench--write-skills dir 50 extra)
  (let ((org-agent-skill-directories (list dir))
        (org-agent-skill-import-directories nil)
        report)
    (let ((secs (org-agent-bench--time
                  (org-agent-skills-reload (lambda (e) (setq report e)))
                  (org-agent-bench--wait-for (lambda () report) 60))))
      (unless (= (length (plist-get report :active)) (+ 50 2 (if extra 1 0)))
        (error "Skills did not load: %S" (plist-get report :inactive)))
      secs)))

(defun org-agent-bench--skills-save (runs label)
  "Main-thread ms of RUNS saves of a new 200-headline note, and how many fired.
The ms are the median; the note is skills-save-LABEL.org."
  (let* ((file (expand-file-name (format "skills-save-%s.org" label) org-agent-bench--tmp))
         (buf (progn (with-temp-file file
                       (dotimes (i 200)
                         (insert (format "* TODO Task %d :project:\nSome notes about %d.\n" i i))))
                     (let ((enable-local-variables nil)) (find-file-noselect file))))
         (fired 0)
         (org-agent-skill-triggered-functions
          (list (lambda (_) (cl-incf fired))))
         times)
    (with-current-buffer buf
      (dotimes (i runs)
        (goto-char (point-max))
        (insert (format "* TODO Edit %d :project:\n" i))
        (garbage-collect)
        (let ((request nil))
          (push (* 1000 (org-agent-bench--time (setq request (org-agent--after-save)))) times)
          (org-agent-bench--wait request)
          ;; Let the trigger's event arrive before the next save.
          (org-agent-bench--wait-for (lambda () nil) 0.05)))
      (set-buffer-modified-p nil))
    ;; The last save's trigger, judged on a worker, may still be on its way.
    (org-agent-bench--wait-for (lambda () (>= fired runs)) 2)
    (kill-buffer buf)
    (list (org-agent-bench--median times) fired)))

(defun org-agent-bench-skills (headlines)
  "Section 9: 50 skills with HEADLINES in the store."
  (org-agent-bench--out "\n== 9. Skills: 50 loaded (store: %d headlines)" headlines)
  (let* ((dir (expand-file-name "skills/" org-agent-bench--tmp))
         (org-agent-skill-directories (list dir))
         (org-agent-skill-import-directories nil)
         (load-secs (org-agent-bench--median
                     (cl-loop repeat 5 collect (org-agent-bench--load-skills dir nil)))))
    (org-agent-bench--out "  load 50 skills (parse, run their tests, order), as Emacs waits: %.1f ms (median of 5)"
                          (* 1000 load-secs))
    (org-agent-bench--row "load 50 skills (parse, test, order), as Emacs waits"
                          (* 1000 load-secs) "ms" "<= 100"
                          (org-agent-bench--verdict (* 1000 load-secs) '<= 100))
    ;; Nothing listening, then 50 skills of which none fires, then one that fires.
    (let* ((org-agent-skill-directories (list (make-temp-file "org-agent-no-skills" t)))
           (none (progn (org-agent-skills-reload) (org-agent-bench--wait-for (lambda () nil) 1)
                        (org-agent-bench--skills-save 15 "none"))))
      (org-agent-bench--load-skills dir nil)
      (let ((quiet (org-agent-bench--skills-save 15 "quiet")))
        (org-agent-bench--load-skills dir t)
        (let ((firing (org-agent-bench--skills-save 15 "fires")))
          (org-agent-bench--out "  save of a 200-headline note, main thread (median of 15): no skill listening %.3f ms; 50 skills, none fires %.3f ms; one fires %.3f ms (%d/15 fired)"
                                (car none) (car quiet) (car firing) (cadr firing))
          (org-agent-bench--row "save, no skill listening: main thread (median)"
                                (car none) "ms" "baseline" "")
          (org-agent-bench--row "save, 50 skills, none fires: main thread (median)"
                                (car quiet) "ms" "<= baseline + 1"
                                (org-agent-bench--verdict (- (car quiet) (car none)) '<= 1))
          (org-agent-bench--row (format "save that fires a skill: main thread (median; %d/15 fired)"
                                        (cadr firing))
                                (car firing) "ms" "" "")
          (unless (and (= (cadr quiet) 0) (= (cadr firing) 15))
            (error "Triggers fired %d times with none listening, %d of 15 with one"
                   (cadr quiet) (cadr firing))))))
    (org-agent-skills-reload)))

;;;; 6. Streaming into the chat

(defvar org-agent-bench--main-depth 0 "Nesting of measured main-thread work.")
(defvar org-agent-bench--main-secs 0.0 "Main-thread seconds spent on chat events.")

(defun org-agent-bench--count-main (fn &rest args)
  "Call FN with ARGS, adding the time of outermost calls to the main-thread total."
  (if (> org-agent-bench--main-depth 0)
      (apply fn args)
    (let ((t0 (float-time))
          (org-agent-bench--main-depth 1))
      (unwind-protect (apply fn args)
        (cl-incf org-agent-bench--main-secs (- (float-time) t0))))))

(defvar org-agent-bench--last-ms (make-hash-table)
  "Function symbol → milliseconds its last call took.
See `org-agent-bench--clock'.")

(defun org-agent-bench--clock (symbol)
  "Time every call of the function SYMBOL into `org-agent-bench--last-ms'."
  (advice-add symbol :around
              (lambda (fn &rest args)
                (let ((t0 (float-time)))
                  (prog1 (apply fn args)
                    (puthash symbol (* 1000 (- (float-time) t0)) org-agent-bench--last-ms))))
              '((name . org-agent-bench-clock))))

(defun org-agent-bench--unclock (symbol)
  "Stop timing the function SYMBOL."
  (advice-remove symbol 'org-agent-bench-clock))

(defun org-agent-bench--wait-for (predicate seconds &optional tick)
  "Let Emacs run (timers, process output) until PREDICATE or SECONDS pass.
PREDICATE is checked after each process output and at least every TICK
seconds (0.005 by default)."
  (let ((deadline (+ (float-time) seconds))
        (tick (or tick 0.005)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil tick))
    (funcall predicate)))

(defconst org-agent-bench--idle-tick 0.1
  "How long the main thread waits at a time while a stream is measured.
An idle Emacs sleeps until input, process output or its next timer: a
waiting loop waking every 5 ms instead would cons (Emacs copies its
timer list at each wake) garbage no user's Emacs makes.  Process output
ends the wait at once, so whatever an event settles is seen at once.")

(defun org-agent-bench--here-running-p (job)
  "Whether the answer in place or rewrite JOB still runs.
Compiled, so that the waiting loop checking it conses nothing."
  (eq (org-agent-here--job-state job) 'running))

;; The stall watcher.  It used to be a 5 ms Lisp timer on the main thread, but Emacs's
;; timer machinery conses about 400 bytes a firing (timer lists copied, times added as
;; lists), which made the idle measuring loop allocate 147 KB/s, more than a streamed
;; answer itself: the watcher set off two or three of the collections it then measured.
;; A Lisp thread that waits on a silent pipe costs about two floats a tick.  It sees the
;; same stalls: it can run only when the main thread lets go of the global lock, which
;; the main thread does only while it waits (for process output, timers, input).  Waiting
;; on one process with JUST-THIS-ONE an integer keeps timers and every other process's
;; output on the main thread, where they belong.

(defun org-agent-bench--stall-watch (watch silent)
  "Record stalls of the main thread into WATCH until its slot 0 is set.
WATCH is the vector of `org-agent-bench--stalls-start'; SILENT is a
pipe process that never speaks, waited on for 5 ms at a time."
  ;; From the moment the watch started, not the moment this thread first ran: what the
  ;; main thread did before it first waited (a command starting the stream, a collection
  ;; in it) is a stall too.
  (let ((last (aref watch 9)) (last-gc (aref watch 8)) (stop nil))
    ;; The stop flag is read after the tick: the last stall before it, however long,
    ;; is counted.
    (while (not stop)
      (setq stop (aref watch 0))
      (accept-process-output silent 0.005 nil 1)
      ;; Read the clock, then the collections' time, before anything else conses: a
      ;; collection after this point falls in the next interval, and is counted there.
      (let* ((now (float-time))
             (gc gc-elapsed)
             (late (- now last 0.005)))
        (when (> late (aref watch 1)) (aset watch 1 late))
        ;; The stall less the collections that fell inside it.
        (let ((net (if (eq gc last-gc) late (- late (- gc last-gc)))))
          (when (> net (aref watch 2)) (aset watch 2 net)))
        (when (> late 0.010)
          (aset watch 4 (cons (list late now gcs-done) (aref watch 4))))
        (aset watch 3 (1+ (aref watch 3)))
        (setq last now last-gc gc)))))

(defun org-agent-bench--stalls-start ()
  "Start watching the main thread's stalls; return the watch.
It is a vector [STOP WORST WORST-WITHOUT-GC TICKS STALLS THREAD PROCESS
GCS GC-ELAPSED START]: STALLS lists (SECONDS WHEN GCS-DONE) for each
over 10 ms."
  (let* ((silent (make-pipe-process :name "org-agent-bench-silent" :noquery t))
         (watch (vector nil 0.0 0.0 0 nil nil silent gcs-done gc-elapsed (float-time))))
    ;; Any thread may wait on it, not only the one that made it.
    (set-process-thread silent nil)
    (aset watch 5 (make-thread (lambda () (org-agent-bench--stall-watch watch silent))
                               "org-agent-bench-stalls"))
    watch))

(defun org-agent-bench--stalls-stop (watch)
  "Stop WATCH; return (WORST-MS WORST-WITHOUT-GC-MS TICKS STALLS GCS GC-MS).
STALLS are those over 10 ms, (SECONDS WHEN GCS-DONE) each; GCS and
GC-MS are the collections since the watch started and their time."
  (aset watch 0 t)
  (thread-join (aref watch 5))
  (delete-process (aref watch 6))
  (list (* 1000 (aref watch 1)) (* 1000 (max 0.0 (aref watch 2))) (aref watch 3)
        (aref watch 4) (- gcs-done (aref watch 7)) (* 1000 (- gc-elapsed (aref watch 8)))))

;; The measuring apparatus runs compiled, whatever the package does: the 5 ms wait loop
;; interpreted conses a lexical environment at each turn, garbage of the bench's own.
(declare-function org-agent-here--job-state "org-agent-here")
(with-eval-after-load 'org-agent-here
  (byte-compile 'org-agent-bench--here-running-p))
(dolist (f '(org-agent-bench--wait-for org-agent-bench--stall-watch org-agent-bench--count-main))
  (byte-compile f))

(defun org-agent-bench--consed ()
  "Bytes of Lisp data allocated so far (approximately, from `memory-use-counts')."
  (pcase-let ((`(,conses ,floats ,vector-cells ,_symbols ,string-chars ,intervals ,strings)
               (memory-use-counts)))
    (+ (* 16 conses) (* 16 floats) (* 8 vector-cells) string-chars (* 56 intervals)
       (* 32 strings))))

(defun org-agent-bench--collection-odds (bytes)
  "Percent of the time that allocating BYTES of Lisp data sees a collection.
With the counter anywhere in its `gc-cons-threshold' budget, a
collection falls inside BYTES of allocation that often (at most 100)."
  (min 100 (/ (* 100.0 bytes) gc-cons-threshold)))

(defun org-agent-bench--repeat-times (n fn)
  "Call FN N times; return the list of per-call seconds."
  (car (org-agent-bench--repeat n fn)))

(defun org-agent-bench-chat (headlines)
  "Section 6: streaming an answer into the chat, with HEADLINES in the store."
  (require 'org-agent-test-server
           (expand-file-name "tests/elisp/org-agent-test-server.el" org-agent-bench-root))
  (org-agent-bench--out "\n== 6. The chat: streaming an answer, C-c C-c to request (store: %d headlines)"
                        headlines)
  (let* ((binary (or (getenv "ORG_AGENT_BENCH_LLM_SERVER")
                     (org-agent-test-server-binary org-agent-bench-root t)))
         (port (org-agent-test-server-start binary))
         (org-agent-backends `((:name "bench" :url ,(format "http://127.0.0.1:%d/v1" port)
                                      :model "bench" :key "none")))
         (finished nil)
         (org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer)))))
         (memex-file (car (org-agent-query :type 'file :limit 1 :fields '(:file))))
         (chat nil))
    (org-agent-bench--clock 'org-agent-chat--finish)
    (org-agent-bench--clock 'org-agent-chat--save)
    (advice-add 'org-agent-process-events :around #'org-agent-bench--count-main)
    (advice-add 'org-agent-chat--insert :around #'org-agent-bench--count-main)
    (unwind-protect
        (progn
          ;; Open the chat from a headline of the memex: that node is the focus.
          (with-current-buffer (find-file-noselect (plist-get memex-file :file))
            (goto-char (point-min))
            (re-search-forward "^\\*\\* " nil t)
            (setq chat (org-agent-chat)))
          (with-current-buffer chat
            ;; 6a. C-c C-c → the request reaches the server.
            (let (send-ms arrive-ms)
              (dotimes (i 21)
                (org-agent-test-server-push :text "ok")
                (setq finished nil)
                (goto-char (point-max))
                (insert (format "Question %d?" i))
                (let* ((t0 (float-time)))
                  (org-agent-chat-send)
                  (let ((t1 (float-time)))
                    (org-agent-bench--wait-for (lambda () finished) 30)
                    (let ((arrived (car (last (org-agent-test-server-times)))))
                      ;; The first turn warms the connection pool and the code paths.
                      (when (> i 0)
                        (push (* 1000 (- t1 t0)) send-ms)
                        (push (* 1000 (- arrived t0)) arrive-ms)))))
                (org-agent-chat--save))
              (let ((arrive (org-agent-bench--median arrive-ms)))
                (org-agent-bench--out "  C-c C-c returns (main thread):       median %s ms, max %s ms (20 turns)"
                                      (org-agent-bench--fmt (org-agent-bench--median send-ms))
                                      (org-agent-bench--fmt (apply #'max send-ms)))
                (org-agent-bench--out "  C-c C-c → request at the server:     median %s ms, max %s ms (context: focus node + %d active projects)"
                                      (org-agent-bench--fmt arrive)
                                      (org-agent-bench--fmt (apply #'max arrive-ms))
                                      (org-agent-count :projects t))
                (org-agent-bench--row "6 C-c C-c to request leaving, median" arrive "ms" "<= 20"
                                      (org-agent-bench--verdict arrive #'<= 20))))
            ;; 6b. A 2,000-token answer at 100 tokens/s, with a 5 ms timer watching stalls.
            (org-agent-test-server-push :tokens 2000 :text "word " :drip_ms 10)
            (setq finished nil org-agent-bench--main-secs 0.0)
            (goto-char (point-max))
            (insert "Tell me a long story.")
            (let* ((gc-ms (progn (garbage-collect)
                                 (* 1000 (org-agent-bench--median
                                          (org-agent-bench--repeat-times 3 #'garbage-collect)))))
                   (gcs gcs-done)
                   (watch (org-agent-bench--stalls-start))
                   (idle-consed (let ((c0 (org-agent-bench--consed)))
                                  ;; The same watcher and wait loop for 3 s without a turn.
                                  (org-agent-bench--wait-for #'ignore 3.0
                                                             org-agent-bench--idle-tick)
                                  (/ (- (org-agent-bench--consed) c0) 3.0)))
                   (idle (prog1 (org-agent-bench--stalls-stop watch)
                           (setq watch (org-agent-bench--stalls-start))))
                   (consed (org-agent-bench--consed))
                   (t0 (float-time))
                   (m nil))
              (unwind-protect
                  (progn
                    (org-agent-chat-send)
                    (org-agent-bench--wait-for (lambda () finished) 120
                                               org-agent-bench--idle-tick))
                (setq m (org-agent-bench--stalls-stop watch)))
              (setq consed (- (org-agent-bench--consed) consed))
              (let* ((wall (- (float-time) t0))
                     (share (* 100 (/ org-agent-bench--main-secs wall)))
                     (worst (nth 0 m)) (worst-no-gc (nth 1 m))
                     (own (max 0 (- consed (* idle-consed wall))))
                     (words (how-many "word" (save-excursion (re-search-backward "^\\* Assistant")) (point-max))))
                (org-agent-bench--out "  streamed %d tokens in %.1f s; %d watcher ticks (every 5 ms, a Lisp thread)"
                                      words wall (nth 2 m))
                (org-agent-bench--out "  worst main-thread stall (watcher lateness): %s ms (idle, before the turn: %s ms)"
                                      (org-agent-bench--fmt worst) (org-agent-bench--fmt (nth 0 idle)))
                (org-agent-bench--out "  worst stall less the garbage collections inside it: %s ms"
                                      (org-agent-bench--fmt worst-no-gc))
                (org-agent-bench--out "  garbage collections during the turn: %d, %s ms in all (a full GC of this Emacs alone: %s ms)"
                                      (nth 4 m) (org-agent-bench--fmt (nth 5 m))
                                      (org-agent-bench--fmt gc-ms))
                (org-agent-bench--out "  Lisp data allocated during the turn: %s KB/s (the watcher and wait loop alone, idle: %s KB/s; GC every %s KB)"
                                      (org-agent-bench--fmt (/ consed wall 1000.0))
                                      (org-agent-bench--fmt (/ idle-consed 1000.0))
                                      (/ gc-cons-threshold 1000))
                (org-agent-bench--out "  the turn's own, less the idle rate: %s KB in all, %s bytes a token: a collection falls in about %s%% of such turns"
                                      (org-agent-bench--fmt (/ own 1000.0))
                                      (org-agent-bench--fmt (/ own (max 1 words)))
                                      (org-agent-bench--fmt (org-agent-bench--collection-odds own)))
                (dolist (st (seq-take (sort (nth 3 m) (lambda (a b) (> (car a) (car b)))) 5))
                  (org-agent-bench--out "    stall %s ms at %.2f s (GCs so far: %d)"
                                        (org-agent-bench--fmt (* 1000 (nth 0 st)))
                                        (- (nth 1 st) t0) (- (nth 2 st) gcs)))
                (org-agent-bench--out "  ending the turn in the chat (fold, save the chat file, hooks): %s ms, of which saving %s ms"
                                      (org-agent-bench--fmt (gethash 'org-agent-chat--finish
                                                                     org-agent-bench--last-ms))
                                      (org-agent-bench--fmt (gethash 'org-agent-chat--save
                                                                     org-agent-bench--last-ms)))
                (org-agent-bench--out "  main thread on the turn (event handling + insertion): %s ms = %s%% of %.1f s"
                                      (org-agent-bench--fmt (* 1000 org-agent-bench--main-secs))
                                      (org-agent-bench--fmt share) wall)
                (org-agent-bench--out "  (batch Emacs: no redisplay; an interactive Emacs adds one redisplay per insertion, at most every %s s)"
                                      org-agent-chat-redisplay-interval)
                (org-agent-bench--row "6 worst main-thread stall while streaming" worst "ms" "<= 16"
                                      (org-agent-bench--verdict worst #'<= 16))
                (org-agent-bench--row "6 worst stall outside garbage collections" worst-no-gc
                                      "ms" "<= 16" (org-agent-bench--verdict worst-no-gc #'<= 16))
                (org-agent-bench--row "6 main-thread share of the streaming turn" share "%" "<= 5"
                                      (org-agent-bench--verdict share #'<= 5))))
            ;; 6c. Interrupt mid-stream: until the turn has ended.
            (org-agent-test-server-push :tokens 2000 :text "word " :drip_ms 10)
            (setq finished nil)
            (goto-char (point-max))
            (insert "Another long story.")
            (org-agent-chat-send)
            (org-agent-bench--wait-for (lambda () nil) 1.0)
            (let ((t0 (float-time)))
              (org-agent-interrupt)
              (org-agent-bench--wait-for (lambda () finished) 10)
              (let ((ms (* 1000 (- (float-time) t0))))
                (org-agent-bench--out "  C-c C-k mid-stream → turn ended in the chat: %s ms" (org-agent-bench--fmt ms))
                (org-agent-bench--row "6 interrupt to turn ended" ms "ms" "<= 100"
                                      (org-agent-bench--verdict ms #'<= 100))))))
      (org-agent-bench--unclock 'org-agent-chat--finish)
      (org-agent-bench--unclock 'org-agent-chat--save)
      (advice-remove 'org-agent-process-events #'org-agent-bench--count-main)
      (advice-remove 'org-agent-chat--insert #'org-agent-bench--count-main)
      (org-agent-test-server-stop))))

;;;; 8. Hostile input

(defconst org-agent-bench-hostile-timeout
  (org-agent-bench--env-int "ORG_AGENT_BENCH_HOSTILE_TIMEOUT" 60)
  "Seconds a hostile case may run before its child Emacs is killed.")

(defconst org-agent-bench-zeros-mb (org-agent-bench--env-int "ORG_AGENT_BENCH_ZEROS_MB" 1024)
  "MB of zeros appended to the store log in the zeros case.")

(defconst org-agent-bench-hostile-cases
  '(("quote" . "100,000 unclosed #+begin_quote lines")
    ("src" . "100,000 unclosed #+begin_src lines")
    ("logbook" . "100,000 unclosed :LOGBOOK: lines")
    ("raw-256k" . "256 KiB of invalid bytes")
    ("raw-512k" . "512 KiB of invalid bytes")
    ("tags-50k" . "one headline with 50,000 tags")
    ("zeros" . "store log followed by zeros"))
  "The hostile cases of issue 9: name and description.")

(defun org-agent-bench--proc-kb (field)
  "FIELD (e.g. \"VmHWM\") of this process's /proc status, in kB."
  (when (file-readable-p "/proc/self/status")
    (with-temp-buffer
      (insert-file-contents "/proc/self/status")
      (when (re-search-forward (format "^%s:[ \t]+\\([0-9]+\\) kB" field) nil t)
        (string-to-number (match-string 1))))))

(defun org-agent-bench--hostile-file (name file)
  "Write the Org file of hostile case NAME to FILE."
  (let ((coding-system-for-write 'no-conversion))
    (with-temp-file file
      (set-buffer-multibyte nil)
      (pcase name
        ((or "quote" "src" "logbook")
         (let ((line (pcase name
                       ("quote" "#+begin_quote\n") ("src" "#+begin_src\n")
                       (_ ":LOGBOOK:\n"))))
           (insert "* A headline\n")
           (dotimes (_ 100000) (insert line))))
        ((or "raw-256k" "raw-512k")
         (insert "* Raw bytes\n")
         (dotimes (i (* 1024 (if (equal name "raw-256k") 256 512)))
           ;; Bytes 0x80-0xFF are never valid UTF-8 on their own; a line end now and then.
           (insert (if (= 79 (% i 80)) ?\n (+ #x80 (org-agent-bench--rand 128))))))
        ("tags-50k"
         (insert "* One headline with many tags :")
         (dotimes (i 50000) (insert (format "t%d:" i)))
         (insert "\nBody.\n"))))))

(defun org-agent-bench--await (request seconds)
  "Wait up to SECONDS for REQUEST's final event; return it, or nil."
  (org-agent-bench--wait request seconds))

(defun org-agent-bench-hostile-child (name)
  "In a fresh Emacs: run hostile case NAME and print what it measured."
  (org-agent-bench--setup)
  (unwind-protect
      (let* ((file (expand-file-name (format "hostile-%s.org" name) org-agent-bench--tmp))
             (out (list :case name)))
        (if (equal name "zeros")
            ;; A store with the demo notes, then a long run of zeros after its log, as a
            ;; disk that filled up or a crashed preallocation leaves it.
            (let* ((state (expand-file-name "state-zeros/" org-agent-bench--tmp))
                   (log (expand-file-name "store.log" state)))
              (org-agent--store-open state)
              (dolist (f (directory-files (expand-file-name "demo/notes" org-agent-bench-root)
                                          t "\\.org\\'"))
                (org-agent--ingest-file f t))
              (org-agent-flush)
              (org-agent--store-close)
              ;; A sparse tail: reads as zeros, costs no disk.
              (call-process "truncate" nil nil nil "-s"
                            (format "+%dM" org-agent-bench-zeros-mb) log)
              (garbage-collect)
              (let* ((bytes (org-agent-bench--size log))
                     (rss (org-agent-bench--proc-kb "VmRSS"))
                     (hwm (org-agent-bench--proc-kb "VmHWM"))
                     report
                     (secs (org-agent-bench--time (setq report (org-agent--store-open state)))))
                (setq out (append out (list :bytes bytes
                                            :main-secs secs :open-secs secs
                                            :rss-before rss :hwm-before hwm
                                            :hwm-after (org-agent-bench--proc-kb "VmHWM")
                                            :ok (list :report report))))))
          (org-agent-bench--hostile-file name file)
          (let* ((coding-system-for-read 'utf-8)
                 (buf (let ((enable-local-variables nil)) (find-file-noselect file)))
                 (rss (progn (garbage-collect) (org-agent-bench--proc-kb "VmRSS")))
                 (hwm (org-agent-bench--proc-kb "VmHWM"))
                 (t0 (current-time))
                 request main-secs event ingest-secs)
            ;; The save path: what `org-agent--after-save' does on the main thread. The first
            ;; call's event times the ingest; the main thread's share is the median of 5
            ;; calls (the text is copied every time, even when it did not change).
            (setq main-secs (org-agent-bench--time
                              (setq request (with-current-buffer buf
                                              (org-agent-ingest-buffer nil t)))))
            (setq event (org-agent-bench--await request org-agent-bench-hostile-timeout))
            (setq ingest-secs (float-time (time-since t0)))
            (when event
              (let ((times (list main-secs)))
                (dotimes (_ 4)
                  (garbage-collect)
                  (push (org-agent-bench--time
                          (setq request (with-current-buffer buf
                                          (org-agent-ingest-buffer nil t))))
                        times)
                  (org-agent-bench--await request org-agent-bench-hostile-timeout))
                (setq main-secs (org-agent-bench--median times))))
            (setq out (append out (list :bytes (org-agent-bench--size file)
                                        :main-secs main-secs
                                        :ingest-secs ingest-secs
                                        :rss-before rss :hwm-before hwm
                                        :ok (if (memq (plist-get event :type) '(ingested superseded))
                                                (list :nodes (plist-get event :nodes))
                                              (or event 'timeout)))))
            (when (equal name "tags-50k")
              ;; Every start opens the store again: time that too.
              (org-agent-flush)
              (org-agent--store-close)
              (let ((secs (org-agent-bench--time
                            (org-agent--store-open org-agent-state-directory))))
                (setq out (append out (list :open-secs secs
                                            :log-bytes (org-agent-bench--size
                                                        (expand-file-name
                                                         "store.log" org-agent-state-directory)))))))
            (setq out (append out (list :hwm-after (org-agent-bench--proc-kb "VmHWM"))))))
        (princ (format "ORG-AGENT-BENCH-HOSTILE %S\n" out)))
    (ignore-errors (org-agent--store-close))
    (org-agent-bench--cleanup)))

(defun org-agent-bench--hostile-run (name)
  "Run hostile case NAME in a child Emacs, killed after the time limit.
Return its plist, or (:case NAME :timeout t)."
  (let* ((emacs (expand-file-name invocation-name invocation-directory))
         (buf (generate-new-buffer " *org-agent-bench-hostile*"))
         (process-environment (cons (concat "ORG_AGENT_BENCH_MODULE_DIR="
                                            org-agent-module-directory)
                                    process-environment))
         (proc (make-process :name "org-agent-bench-hostile" :buffer buf :noquery t
                             :connection-type 'pipe :stderr (get-buffer-create " *hostile-err*")
                             :command (list emacs "-Q" "--batch" "-l"
                                            (expand-file-name "bench/org-agent-bench.el"
                                                              org-agent-bench-root)
                                            "--eval" (format "(org-agent-bench-hostile-child %S)"
                                                             name))))
         ;; Writing the case and starting Emacs come on top of the case's own limit.
         (deadline (+ (float-time) org-agent-bench-hostile-timeout 30)))
    (while (and (process-live-p proc) (< (float-time) deadline))
      (accept-process-output proc 0.05))
    (prog1
        (if (process-live-p proc)
            (progn (delete-process proc) (list :case name :timeout t))
          (with-current-buffer buf
            (goto-char (point-min))
            (if (re-search-forward "^ORG-AGENT-BENCH-HOSTILE \\(.*\\)$" nil t)
                (car (read-from-string (match-string 1)))
              (list :case name :error (buffer-string)))))
      (kill-buffer buf))))

(defun org-agent-bench-hostile ()
  "Section 8: every hostile input of issue 9, each in a fresh child Emacs."
  (org-agent-bench--out "\n== 8. Hostile input (issue 9): each case in a fresh emacs --batch, limit %d s"
                        org-agent-bench-hostile-timeout)
  (org-agent-bench--out "  save path = `org-agent-ingest-buffer' (async, as the after-save hook): main thread = that call (median of 5); ingest = until the worker's first event")
  (dolist (c org-agent-bench-hostile-cases)
    (org-agent-bench--progress "hostile: %s..." (cdr c))
    (let* ((r (org-agent-bench--hostile-run (car c)))
           (name (car c))
           (mb (and (plist-get r :bytes) (org-agent-bench--mb (plist-get r :bytes))))
           (main-ms (and (plist-get r :main-secs) (* 1000 (plist-get r :main-secs))))
           (main-per-mb (org-agent-bench--div main-ms mb))
           (ingest (plist-get r :ingest-secs))
           (ingest-per-mb (org-agent-bench--div ingest mb))
           (peak (and (plist-get r :hwm-after) (plist-get r :rss-before)
                      (/ (- (plist-get r :hwm-after) (plist-get r :rss-before)) 1024.0)))
           (ok (plist-get r :ok))
           (failed (or (plist-get r :timeout) (plist-get r :error)
                       (and (not (equal name "zeros")) (not (plist-member ok :nodes))))))
      (cond
       ((plist-get r :timeout)
        (org-agent-bench--out "  %-8s %s: killed after the time limit (> %d s)"
                              name (cdr c) org-agent-bench-hostile-timeout))
       ((plist-get r :error)
        (org-agent-bench--out "  %-8s %s: the child failed:\n%s" name (cdr c)
                              (string-trim (plist-get r :error))))
       (t
        (org-agent-bench--out "  %-8s %s (%.2f MB): main thread %s ms = %s ms/MB; %s %s s = %s s/MB; peak memory +%s MB (VmHWM %s MB); %S"
                              name (cdr c) mb
                              (org-agent-bench--fmt main-ms) (org-agent-bench--fmt main-per-mb)
                              (if (equal name "zeros") "open" "ingest")
                              (org-agent-bench--fmt (or ingest (plist-get r :open-secs)))
                              (org-agent-bench--fmt (org-agent-bench--div
                                                     (or ingest (plist-get r :open-secs)) mb))
                              (org-agent-bench--fmt peak)
                              (org-agent-bench--fmt (/ (plist-get r :hwm-after) 1024.0))
                              ok)
        (when (plist-get r :open-secs)
          (org-agent-bench--out "           store open: %s ms (log %.2f MB)"
                                (org-agent-bench--fmt (* 1000 (plist-get r :open-secs)))
                                (org-agent-bench--mb (or (plist-get r :log-bytes)
                                                         (plist-get r :bytes)))))))
      (let ((verdict (lambda (v bound) (if failed "MISS" (org-agent-bench--verdict v #'<= bound)))))
        (org-agent-bench--row (format "8  %s: main-thread ms per MB" name)
                              (and (not failed) main-per-mb) "ms/MB" "<= 10 ms/MB"
                              (funcall verdict main-per-mb 10))
        (unless (equal name "zeros")
          (org-agent-bench--row (format "8  %s: ingest seconds per MB" name)
                                (and (not failed) ingest-per-mb) "s/MB" "<= 1 s/MB"
                                (funcall verdict ingest-per-mb 1)))
        (when (plist-get r :open-secs)
          (let* ((log-mb (org-agent-bench--mb (or (plist-get r :log-bytes) (plist-get r :bytes))))
                 (open-per-mb (org-agent-bench--div (* 1000 (plist-get r :open-secs)) log-mb)))
            (org-agent-bench--row (format "8  %s: store open, main-thread ms per MB of log" name)
                                  open-per-mb "ms/MB" "<= 10 ms/MB"
                                  (funcall verdict open-per-mb 10))))
        (org-agent-bench--row (format "8  %s: peak memory above the start (VmHWM)" name)
                              (and (not failed) peak) "MB"
                              (if (equal name "zeros") "<= 64 MB" "(no target)")
                              (cond ((not (equal name "zeros")) (if peak "info" "n/a"))
                                    (t (funcall verdict peak 64)))))))
  (when (equal (getenv "ORG_AGENT_BENCH_ONLY") "hostile")
    (org-agent-bench--summary)))

;;;; 11. Approving a batch of proposals (issue 13)

(defconst org-agent-bench-approvals-headlines
  (org-agent-bench--env-int "ORG_AGENT_BENCH_APPROVALS_HEADLINES" 3000)
  "Memex headlines in the note around the 20 tasks of section 11.")

(defconst org-agent-bench-approvals-runs
  (org-agent-bench--env-int "ORG_AGENT_BENCH_APPROVALS_RUNS" 3)
  "Runs of section 11, each with a fresh note, store and queue.")

(defconst org-agent-bench--approvals-skill
  "#+SKILL_NAME: bench-approvals
#+DESCRIPTION: Use to tidy the inbox: close, schedule, tag and refile its tasks.
* Trigger
:PROPERTIES:
:ON: user
:END:
* Prompt
Tidy the inbox: close, schedule, tag and refile its tasks.
"
  "The skill whose background run proposes the 20 edits.
No gate rules: the default policy asks about edits, so a run with no
user waiting queues them.")

(defun org-agent-bench--approvals-edit (i)
  "The edit proposed for inbox task I (1-20): (TOOL ARGS CHECK).
ARGS is an alist without the id.  CHECK is a regexp the task's
entry (its headline to the next one) matches once the edit ran, or
\(:parent TITLE) for a refile: the level-1 headline it now sits under."
  (cond ((<= i 5) (list "set_todo" '((state . "DONE")) "\\`\\*\\* DONE "))
        ((<= i 9) (let ((date (format "2026-12-%02d" (- i 5))))
                    (list "schedule" `((date . ,(if (= i 6) (concat date " 09:30") date)))
                          (concat "^SCHEDULED: <" date))))
        ((<= i 11) (let ((date (format "2026-12-%02d" (+ i 10))))
                     (list "deadline" `((date . ,date)) (concat "DEADLINE: <" date))))
        ((<= i 15) (list "set_tags" '((tags . ["bench" "errand"])) "\\`[^\n]*[ \t]:bench:errand:$"))
        ((= i 16) (list "set_property" '((key . "EFFORT") (value . "1:30"))
                        "^:EFFORT: +1:30$"))
        ((<= i 18) (let ((text (format "Approved note %d." i)))
                     (list "add_note" `((text . ,text)) (regexp-quote text))))
        (t (list "refile" `((target_id . ,(if (= i 19) "bench-project-alpha" "bench-project-beta")))
                 (list :parent (if (= i 19) "Project Alpha" "Project Beta"))))))

(defun org-agent-bench--approvals-note (headlines)
  "Text of section 11's note: HEADLINES memex headlines around the inbox.
The inbox's 20 TODO tasks (odd ones and the refiled ones with an
:ID:, the others with the store's path ids; every third tagged) sit
in the middle, followed by the two projects they may be refiled to."
  (setq org-agent-bench--rng 2463534242)
  (with-temp-buffer
    (set-buffer-multibyte t)
    (insert "#+TITLE: Approvals bench\n\n")
    (let ((level 0) (n 900000) (half (/ headlines 2)))
      (cl-flet ((memex (count)
                  (setq level 0)
                  (dotimes (_ count)
                    (setq level (org-agent-bench--next-level level))
                    (org-agent-bench--insert-headline n level)
                    (cl-incf n))))
        (memex half)
        (insert "* Inbox\n")
        (dotimes (k 20)
          (let ((i (1+ k)))
            (insert (format "** TODO Approval task %02d %s%s\n" i (org-agent-bench--words 2 5)
                            (if (= 0 (% i 3)) " :work:" "")))
            (when (or (cl-oddp i) (>= i 19))
              (insert (format ":PROPERTIES:\n:ID:       bench-approval-%02d\n:END:\n" i)))
            (insert (org-agent-bench--words 4 10) ".\n")))
        (insert "* Project Alpha\n:PROPERTIES:\n:ID:       bench-project-alpha\n:END:\n"
                "** TODO Existing step of Alpha\n"
                "* Project Beta\n:PROPERTIES:\n:ID:       bench-project-beta\n:END:\n"
                "** TODO Existing step of Beta\n")
        (memex (- headlines half))))
    (buffer-string)))

(defun org-agent-bench--approvals-check (file)
  "Which of the 20 edits FILE on disk shows: (DONE-COUNT . MISSING-TASK-NUMBERS)."
  (with-temp-buffer
    (insert-file-contents file)
    (let (missing)
      (dotimes (k 20)
        (let* ((i (1+ k))
               (check (nth 2 (org-agent-bench--approvals-edit i))))
          (goto-char (point-min))
          (if (not (re-search-forward (format "^\\*+ .*Approval task %02d " i) nil t))
              (push i missing)
            (let* ((start (line-beginning-position))
                   (end (save-excursion (if (re-search-forward "^\\*+ " nil t)
                                            (match-beginning 0)
                                          (point-max))))
                   (entry (buffer-substring-no-properties start end))
                   (parent (save-excursion
                             (and (re-search-backward "^\\* \\(.*\\)$" nil t)
                                  (match-string-no-properties 1)))))
              (unless (if (stringp check)
                          (string-match-p check entry)
                        (and (string-prefix-p "** " entry)
                             (equal parent (plist-get check :parent))))
                (push i missing))))))
      (cons (- 20 (length missing)) (nreverse missing)))))

(defvar org-agent-bench--tallies (make-hash-table)
  "Function symbol → [MILLISECONDS CALLS GC-MILLISECONDS] since last cleared.
See `org-agent-bench--tally'.")

(defun org-agent-bench--tally (symbol)
  "Add the time, count and GC time of each call of function SYMBOL to its tally."
  (advice-add symbol :around
              (lambda (fn &rest args)
                (let ((t0 (float-time)) (gc0 gc-elapsed))
                  (unwind-protect (apply fn args)
                    (let ((cell (or (gethash symbol org-agent-bench--tallies)
                                    (puthash symbol (vector 0.0 0 0.0) org-agent-bench--tallies))))
                      (cl-incf (aref cell 0) (* 1000 (- (float-time) t0)))
                      (cl-incf (aref cell 1))
                      (cl-incf (aref cell 2) (* 1000 (- gc-elapsed gc0)))))))
              '((name . org-agent-bench-tally))))

(defun org-agent-bench--untally (symbol)
  "Stop tallying the function SYMBOL."
  (advice-remove symbol 'org-agent-bench-tally))

(defun org-agent-bench--tallied (symbol &optional what)
  "Milliseconds tallied for SYMBOL; WHAT `calls': how many calls, `gc': GC ms."
  (let ((cell (gethash symbol org-agent-bench--tallies)))
    (cond ((null cell) (if (eq what 'calls) 0 0.0))
          ((eq what 'calls) (aref cell 1))
          ((eq what 'gc) (aref cell 2))
          (t (aref cell 0)))))

(defvar org-agent-bench--ingests nil
  "Requests of asynchronous buffer ingests, newest first.")

(defun org-agent-bench--note-ingest (fn &optional buffer async callback)
  "Call FN with BUFFER, ASYNC and CALLBACK; remember an asynchronous request."
  (let ((result (funcall fn buffer async callback)))
    (when (and async (integerp result)) (push result org-agent-bench--ingests))
    result))

(defun org-agent-bench--percentile (xs p)
  "The P-th quantile (0-1) of the numbers XS, by nearest rank."
  (let ((s (sort (copy-sequence xs) #'<)))
    (nth (max 0 (1- (ceiling (* p (length s))))) s)))

(defconst org-agent-bench--approvals-timed
  '(org-agent-actuator-run save-buffer org-agent-ingest-buffer org-agent--approval-settle
    org-agent-approvals--refresh-if-shown org-agent-approvals--get org-agent-approvals--queued)
  "The functions section 11 splits an approval's time into.")

(defconst org-agent-bench--approvals-per-run 20
  "Proposals one background run of section 11 queues.
A proposal queued for the user is not a refusal (src/agent/turn/act.rs),
so one run queues the whole batch; the probe at the start of the
section checks that it still does.")

(defun org-agent-bench--approvals-prepare (file text state)
  "Write TEXT to FILE, ingest it into a fresh store STATE, load the skill.
STATE is relative to the bench's temporary directory.  Return the
store's headlines as (:id :title) plists."
  (when-let ((old (get-file-buffer file)))
    (with-current-buffer old (set-buffer-modified-p nil))
    (kill-buffer old))
  (let ((coding-system-for-write 'utf-8-unix))
    (write-region text nil file nil 'silent))
  ;; A fresh store, and so a fresh approvals queue, with the note in it.
  (let ((ingest (org-agent-bench--dir-ingest (file-name-directory file) state)))
    (unless (eq (plist-get (cadr ingest) :type) 'directory-done)
      (error "Section 11: ingesting %s failed: %S" file (cadr ingest))))
  (org-agent--send-privacy)
  (let (report)
    (org-agent-skills-reload (lambda (e) (setq report e)))
    (unless (org-agent-bench--wait-for (lambda () report) 60)
      (error "Section 11: the skills did not load")))
  (unless (eq (plist-get (seq-find (lambda (s) (equal (plist-get s :name) "bench-approvals"))
                                   (org-agent-skills-list))
                         :status)
              'active)
    (error "Section 11: the skill bench-approvals is not active"))
  (org-agent-query :type 'headline :fields '(:id :title)))

(defun org-agent-bench--approvals-calls (headlines from to)
  "The tool calls (NAME ARGS) of the edits FROM to TO, for the store's HEADLINES."
  (cl-loop for i from from to to
           for prefix = (format "Approval task %02d " i)
           for node = (seq-find (lambda (n) (string-prefix-p prefix (plist-get n :title)))
                                headlines)
           for edit = (org-agent-bench--approvals-edit i)
           unless node do (error "Section 11: no node %s in the store" prefix)
           collect (list (car edit) (cons (cons 'id (plist-get node :id)) (cadr edit)))))

(defun org-agent-bench--approvals-skill-run (calls)
  "Run the skill once, the model proposing CALLS; return the run's outcome plist.
Wait until every pending proposal has its preview (made on the main
thread as it is queued), so that none arrives for another store."
  (let* ((finished nil)
         (org-agent-skill-finished-functions
          (list (lambda (_name outcome) (setq finished outcome)))))
    (org-agent-test-server-push :text "" :calls (vconcat calls))
    (org-agent-test-server-push :text "Proposed the edits.")
    (org-agent-skill-run "bench-approvals" "Tidy the inbox." "the approvals bench")
    (unless (org-agent-bench--wait-for (lambda () finished) 120)
      (error "Section 11: the background run did not finish"))
    (unless (org-agent-bench--wait-for
             (lambda () (cl-every (lambda (p) (plist-get p :diff)) (org-agent-approvals-list)))
             60)
      (error "Section 11: the proposals were not all previewed"))
    finished))

(defun org-agent-bench--approvals-run (state file text)
  "One run of section 11: queue 20 proposals, approve them; return the figures.
FILE is written anew with TEXT and ingested into a fresh store STATE."
  (let* ((org-agent-state-directory (expand-file-name (concat state "/") org-agent-bench--tmp))
         (headlines (org-agent-bench--approvals-prepare file text state))
         (runs 0)
         (approvals nil))
    (clrhash org-agent-bench--tallies)
    (cl-loop for from from 1 to 20 by org-agent-bench--approvals-per-run
             for to = (min 20 (+ from org-agent-bench--approvals-per-run -1))
             for outcome = (org-agent-bench--approvals-skill-run
                            (org-agent-bench--approvals-calls headlines from to))
             do (cl-incf runs)
             unless (and (eq (plist-get outcome :outcome) 'done)
                         (= (length (plist-get outcome :queued)) (1+ (- to from))))
             do (error "Section 11: a run proposing %d edits ended so: %S" (1+ (- to from)) outcome))
    (unless (= (length (org-agent-approvals-list)) 20)
      (error "Section 11: %d proposals pending, not 20" (length (org-agent-approvals-list))))
    (let ((preview-ms (org-agent-bench--tallied 'org-agent-approvals--queued))
          (tools (mapcar (lambda (p) (plist-get p :tool)) (org-agent-approvals-list)))
          (buffer (progn (org-agent-approvals) (get-buffer org-agent-approvals-buffer-name)))
          (note-buffer (get-file-buffer file))
          gcs0 gc0)
      (garbage-collect)
      (with-current-buffer buffer
        (let ((command (key-binding "a")))
          (unless (eq command #'org-agent-approvals-approve-at-point)
            (error "Section 11: a runs %S in the approvals buffer" command))
          (setq gcs0 gcs-done gc0 gc-elapsed)
          (dotimes (_ 20)
            ;; As the user: point on the first proposal, press a.
            (goto-char (point-min))
            (org-agent-bench--move-to-proposal)
            (let* ((id (get-text-property (point) 'org-agent-approval))
                   (tool (plist-get (seq-find (lambda (p) (eql (plist-get p :id) id))
                                              (org-agent-approvals-list))
                                    :tool))
                   (gcs gcs-done) (gc gc-elapsed)
                   (consed (org-agent-bench--consed))
                   (ms (progn
                         (clrhash org-agent-bench--tallies)
                         (setq org-agent-bench--ingests nil)
                         (* 1000 (org-agent-bench--time (call-interactively command)))))
                   (parts (mapcar (lambda (f) (list (org-agent-bench--tallied f)
                                                    (org-agent-bench--tallied f 'gc)))
                                  '(org-agent-actuator-run org-agent--approval-settle
                                    org-agent-approvals--refresh-if-shown
                                    org-agent-approvals--get))))
              (push (list :id id :tool tool :ms ms :gcs (- gcs-done gcs)
                          :gc-ms (* 1000 (- gc-elapsed gc))
                          :kb (/ (- (org-agent-bench--consed) consed) 1000.0)
                          :actuator (car (nth 0 parts))
                          :save (org-agent-bench--tallied 'save-buffer)
                          :ingest (org-agent-bench--tallied 'org-agent-ingest-buffer)
                          :ingests (org-agent-bench--tallied 'org-agent-ingest-buffer 'calls)
                          :settle (car (nth 1 parts))
                          :refresh (car (nth 2 parts))
                          :get (car (nth 3 parts))
                          :other (- ms (apply #'+ (mapcar #'car parts)))
                          ;; The same, net of the garbage collections inside them.
                          :net-actuator (apply #'- (nth 0 parts))
                          :net-save (- (org-agent-bench--tallied 'save-buffer)
                                       (org-agent-bench--tallied 'save-buffer 'gc))
                          :net-ingest (- (org-agent-bench--tallied 'org-agent-ingest-buffer)
                                         (org-agent-bench--tallied 'org-agent-ingest-buffer 'gc))
                          :net-refresh (apply #'- (nth 2 parts))
                          :net-ms (- ms (* 1000 (- gc-elapsed gc))))
                    approvals)
              ;; The user's next key comes later: the store catches up with the edit.
              (dolist (request org-agent-bench--ingests)
                (unless (org-agent-bench--wait request 30)
                  (error "Section 11: the ingest after approving #%s did not finish" id)))
              (org-agent-bench--wait-for #'ignore 0.02)))))
      (setq gcs0 (- gcs-done gcs0) gc0 (* 1000 (- gc-elapsed gc0)))
      ;; A bench that measures nothing is a defect: the 20 edits are in the file.
      (let ((check (org-agent-bench--approvals-check file))
            (pending (length (org-agent-approvals-list)))
            (approved (cl-count-if (lambda (p) (eq (plist-get p :state) 'approved))
                                   (org-agent-approvals-list t))))
        (unless (and (= (car check) 20) (= pending 0) (= approved 20)
                     (not (buffer-modified-p note-buffer)))
          (error "Section 11: %d/20 edits on disk (missing tasks %S), %d pending, %d approved"
                 (car check) (cdr check) pending approved))
        (kill-buffer buffer)
        (list :approvals (nreverse approvals) :preview-ms preview-ms :tools tools :runs runs
              :bytes (org-agent-bench--size file) :on-disk (car check)
              :gcs gcs0 :gc-ms gc0
              :headlines (with-temp-buffer
                           (insert-file-contents file)
                           (how-many "^\\*+ " (point-min) (point-max))))))))

(defun org-agent-bench--move-to-proposal ()
  "Move point to the start of the first proposal after it, or signal."
  (let ((match (text-property-search-forward 'org-agent-approval nil
                                             (lambda (_ prop) prop))))
    (unless match (error "Section 11: no proposal left in the approvals buffer"))
    (goto-char (prop-match-beginning match))))

(defun org-agent-bench--approvals-probe (file text)
  "Whether one background run can queue all 20 edits of FILE (TEXT).
Return its outcome plist; it runs in a store of its own."
  (let* ((state "approvals-probe/state")
         (org-agent-state-directory (expand-file-name (concat state "/") org-agent-bench--tmp))
         (headlines (org-agent-bench--approvals-prepare file text state)))
    (org-agent-bench--approvals-skill-run (org-agent-bench--approvals-calls headlines 1 20))))

(defun org-agent-bench--approvals-backend (port)
  "The backends list of the test server on PORT."
  `((:name "bench" :url ,(format "http://127.0.0.1:%d/v1" port) :model "bench" :key "none")))

(defun org-agent-bench-approvals ()
  "Section 11: the main-thread time of approving 20 proposals of background runs."
  (require 'org-agent-test-server
           (expand-file-name "tests/elisp/org-agent-test-server.el" org-agent-bench-root))
  (let* ((binary (or (getenv "ORG_AGENT_BENCH_LLM_SERVER")
                     (org-agent-test-server-binary org-agent-bench-root t)))
         (notes (file-name-as-directory (expand-file-name "approvals/notes" org-agent-bench--tmp)))
         (skills (file-name-as-directory (expand-file-name "approvals/skills" org-agent-bench--tmp)))
         (file (expand-file-name "inbox.org" notes))
         (text (org-agent-bench--approvals-note org-agent-bench-approvals-headlines))
         (org-agent-directories (list notes))
         (org-agent-skill-directories (list skills))
         (org-agent-skill-import-directories nil)
         (org-agent-skill-runs-quiet t)
         ;; As with `org-agent-mode' on: a save re-ingests the buffer.
         (after-save-hook (cons #'org-agent--after-save after-save-hook))
         probe runs)
    (make-directory notes t)
    (make-directory (expand-file-name "bench-approvals" skills) t)
    (with-temp-file (expand-file-name "bench-approvals/SKILL.org" skills)
      (insert org-agent-bench--approvals-skill))
    (dolist (f org-agent-bench--approvals-timed) (org-agent-bench--tally f))
    (advice-add 'org-agent-ingest-buffer :around #'org-agent-bench--note-ingest)
    (unwind-protect
        (progn
          (org-agent-bench--progress "approvals: one run proposing all 20...")
          (setq probe (let ((org-agent-backends (org-agent-bench--approvals-backend
                                                 (org-agent-test-server-start binary))))
                        (org-agent-bench--approvals-probe file text)))
          ;; A run that gave up leaves scripted replies unread: a fresh server.
          (let ((org-agent-backends (org-agent-bench--approvals-backend
                                     (org-agent-test-server-start binary))))
            (dotimes (run org-agent-bench-approvals-runs)
              (org-agent-bench--progress "approvals: run %d of %d..." (1+ run)
                                         org-agent-bench-approvals-runs)
              (push (org-agent-bench--approvals-run (format "approvals/state-%d" run) file text)
                    runs))))
      (dolist (f org-agent-bench--approvals-timed) (org-agent-bench--untally f))
      (advice-remove 'org-agent-ingest-buffer #'org-agent-bench--note-ingest)
      (org-agent-test-server-stop)
      (when-let ((buffer (get-file-buffer file)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)))
    (setq runs (nreverse runs))
    (let* ((first (car runs))
           (per-run (lambda (fn) (org-agent-bench--median (mapcar fn runs))))
           (field-median (lambda (key)
                           (funcall per-run (lambda (r) (org-agent-bench--median
                                                         (mapcar (lambda (a) (plist-get a key))
                                                                 (plist-get r :approvals)))))))
           (ms-of (lambda (r) (mapcar (lambda (a) (plist-get a :ms)) (plist-get r :approvals))))
           (median (funcall per-run (lambda (r) (org-agent-bench--median (funcall ms-of r)))))
           (p95 (funcall per-run (lambda (r) (org-agent-bench--percentile (funcall ms-of r) 0.95))))
           (worst (funcall per-run (lambda (r) (apply #'max (funcall ms-of r)))))
           (totals (mapcar (lambda (r) (apply #'+ (funcall ms-of r))) runs))
           (total (org-agent-bench--median totals))
           (full-gc-ms (progn (garbage-collect)
                              (* 1000 (org-agent-bench--median
                                       (org-agent-bench--repeat-times 3 #'garbage-collect)))))
           (all (apply #'append (mapcar (lambda (r) (plist-get r :approvals)) runs))))
      (org-agent-bench--out "\n== 11. Approving 20 proposals of a skill's background runs (note: %d headlines, %s MB; %d runs, a fresh queue each)"
                            (plist-get first :headlines)
                            (org-agent-bench--fmt (org-agent-bench--mb (plist-get first :bytes)))
                            (length runs))
      (org-agent-bench--out "  one background run proposing all 20: %d queued, %s%s"
                            (length (plist-get probe :queued)) (plist-get probe :outcome)
                            (if (eq (plist-get probe :outcome) 'failed)
                                (format " (%s)" (truncate-string-to-width
                                                 (or (plist-get probe :message) "") 60 nil nil "…"))
                              ""))
      (org-agent-bench--out "  so queued by %d runs of <= %d: %s; previewed on the main thread as queued: %s ms for the 20"
                            (plist-get first :runs) org-agent-bench--approvals-per-run
                            (mapconcat (lambda (tool) (format "%s %d" tool (cl-count tool (plist-get first :tools)
                                                                                     :test #'equal)))
                                       (delete-dups (copy-sequence (plist-get first :tools))) ", ")
                            (org-agent-bench--fmt (funcall per-run (lambda (r) (plist-get r :preview-ms)))))
      (org-agent-bench--out "  approve one (a in the approvals buffer), main thread: median %s ms, p95 %s ms, max %s ms (medians of runs)"
                            (org-agent-bench--fmt median) (org-agent-bench--fmt p95)
                            (org-agent-bench--fmt worst))
      (org-agent-bench--out "  the batch of 20: %s ms in all (median; runs: %s ms)"
                            (org-agent-bench--fmt total)
                            (mapconcat #'org-agent-bench--fmt totals ", "))
      (org-agent-bench--out "  one approval, medians: actuator %s ms (of which save-buffer %s, store ingest copies %s in %s calls), queue settle %s, buffer refresh %s, finding it %s, other %s"
                            (org-agent-bench--fmt (funcall field-median :actuator))
                            (org-agent-bench--fmt (funcall field-median :save))
                            (org-agent-bench--fmt (funcall field-median :ingest))
                            (org-agent-bench--fmt (funcall field-median :ingests))
                            (org-agent-bench--fmt (funcall field-median :settle))
                            (org-agent-bench--fmt (funcall field-median :refresh))
                            (org-agent-bench--fmt (funcall field-median :get))
                            (org-agent-bench--fmt (funcall field-median :other)))
      (org-agent-bench--out "  the same net of GC: approval %s ms, actuator %s (save-buffer %s, ingest copies %s), buffer refresh %s; GC %s ms in %s collections per approval, %s KB allocated (GC every %d KB; a full GC here: %s ms)"
                            (org-agent-bench--fmt (funcall field-median :net-ms))
                            (org-agent-bench--fmt (funcall field-median :net-actuator))
                            (org-agent-bench--fmt (funcall field-median :net-save))
                            (org-agent-bench--fmt (funcall field-median :net-ingest))
                            (org-agent-bench--fmt (funcall field-median :net-refresh))
                            (org-agent-bench--fmt (funcall field-median :gc-ms))
                            (org-agent-bench--fmt (funcall field-median :gcs))
                            (org-agent-bench--fmt (funcall field-median :kb))
                            (/ gc-cons-threshold 1000)
                            (org-agent-bench--fmt full-gc-ms))
      (org-agent-bench--out "  buffer refresh net of GC, as the list shrinks: %s ms with 18 proposals left, %s ms with 1 left (each diff fontified once, when first shown)"
                            (org-agent-bench--fmt
                             (funcall per-run (lambda (r) (plist-get (nth 1 (plist-get r :approvals)) :net-refresh))))
                            (org-agent-bench--fmt
                             (funcall per-run (lambda (r) (plist-get (nth 18 (plist-get r :approvals)) :net-refresh)))))
      (org-agent-bench--out "  by verb, median ms (of which actuator): %s"
                            (mapconcat
                             (lambda (tool)
                               (let ((of (seq-filter (lambda (a) (equal (plist-get a :tool) tool)) all)))
                                 (format "%s %s (%s)" tool
                                         (org-agent-bench--fmt
                                          (org-agent-bench--median (mapcar (lambda (a) (plist-get a :ms)) of)))
                                         (org-agent-bench--fmt
                                          (org-agent-bench--median (mapcar (lambda (a) (plist-get a :actuator)) of))))))
                             (delete-dups (mapcar (lambda (a) (plist-get a :tool)) all)) ", "))
      (let ((slowest (car (sort (copy-sequence all) (lambda (a b) (> (plist-get a :ms) (plist-get b :ms)))))))
        (org-agent-bench--out "  slowest approval: #%d %s, %s ms (actuator %s, save-buffer %s, buffer refresh %s; %d GCs, %s ms)"
                              (plist-get slowest :id) (plist-get slowest :tool)
                              (org-agent-bench--fmt (plist-get slowest :ms))
                              (org-agent-bench--fmt (plist-get slowest :actuator))
                              (org-agent-bench--fmt (plist-get slowest :save))
                              (org-agent-bench--fmt (plist-get slowest :refresh))
                              (plist-get slowest :gcs)
                              (org-agent-bench--fmt (plist-get slowest :gc-ms))))
      (org-agent-bench--out "  garbage collections during the 20: %s, %s ms of the %s ms (median of runs)"
                            (funcall per-run (lambda (r) (plist-get r :gcs)))
                            (org-agent-bench--fmt (funcall per-run (lambda (r) (plist-get r :gc-ms))))
                            (org-agent-bench--fmt total))
      (org-agent-bench--out "  checked each run: %s of 20 edits in the file on disk, no proposal pending, 20 settled as approved"
                            (mapconcat (lambda (r) (number-to-string (plist-get r :on-disk))) runs "/"))
      (org-agent-bench--out "  (batch Emacs: no redisplay; between approvals the store catches up, as at a user's pace)")
      (org-agent-bench--row "11 approve one proposal: main thread (median)" median "ms" "<= 100"
                            (org-agent-bench--verdict median #'<= 100))
      (org-agent-bench--row "11 approve a batch of 20 proposals: main thread, total" total "ms" "" "")
      (org-agent-bench--row "11 proposals one background run can queue (of 20)"
                            (length (plist-get probe :queued)) "" "20"
                            (if (and (eq (plist-get probe :outcome) 'done)
                                     (= (length (plist-get probe :queued)) 20))
                                "PASS" "MISS")))))

;;;; Driver

(defun org-agent-bench--header ()
  "Print what was measured where."
  (let ((default-directory org-agent-bench-root))
    (org-agent-bench--out "org-agent benchmark — %s" (format-time-string "%F %T %Z"))
    (org-agent-bench--out "  checkout %s (%s%s)" org-agent-bench-root
                          (string-trim (shell-command-to-string "git rev-parse --short HEAD 2>/dev/null"))
                          (if (string-empty-p (shell-command-to-string "git status --porcelain -- src elisp Cargo.toml Cargo.lock 2>/dev/null"))
                              "" ", src/elisp modified"))
    (org-agent-bench--out "  module %s (%s)" (org-agent--module-file)
                          (format-time-string "%F %T" (file-attribute-modification-time
                                                       (file-attributes (org-agent--module-file)))))
    (org-agent-bench--out "  Emacs %s, Org %s, %s CPUs, load average %s"
                          emacs-version org-version
                          (if (fboundp 'num-processors) (num-processors) "?")
                          (string-trim (with-temp-buffer
                                         (insert-file-contents "/proc/loadavg")
                                         (buffer-substring 1 (min (point-max) 15)))))
    (org-agent-bench--out "  MB = 10^6 bytes; ratios compare the two sides measured in this same run.")))

(defun org-agent-bench--summary ()
  "Print the summary table."
  (org-agent-bench--out "\n== Summary")
  (org-agent-bench--out "  %-66s %10s %-6s %-12s %s" "figure" "value" "unit" "target" "result")
  (org-agent-bench--out "  %s" (make-string 104 ?-))
  (dolist (r (sort (reverse org-agent-bench--results)   ; stable: by section, then as run
                   (lambda (x y) (string< (car (split-string (car x)))
                                          (car (split-string (car y)))))))
    (pcase-let ((`(,label ,value ,unit ,target ,verdict) r))
      (org-agent-bench--out "  %-66s %10s %-6s %-12s %s"
                            label (org-agent-bench--fmt value) unit target verdict)))
  (let ((miss (cl-count-if (lambda (r) (member (nth 4 r) '("MISS" "FAIL" "n/a")))
                           org-agent-bench--results)))
    (org-agent-bench--out "  %d of %d targets missed"
                          miss (cl-count-if (lambda (r) (member (nth 4 r) '("PASS" "MISS" "FAIL" "n/a")))
                                            org-agent-bench--results))))

;;;; 15. Streaming where the user is: an answer in place, a rewrite

(defun org-agent-bench--stalls-while (thunk done)
  "Call THUNK, let Emacs run until DONE.
Return (WORST-MS SECONDS TICKS NO-GC-MS GCS KB): the worst main-thread
stall while the stream lands (see `org-agent-bench--stalls-start'), the
same less the collections inside it, the collections and the Lisp data
allocated meanwhile.  As in section 6, the stream starts right after a
collection, so that one the run before brought on does not fall in it,
and how often a collection would fall in such a stream is printed: from
the stream's own data, less what the watcher and wait loop allocate in
2 s without a stream."
  (garbage-collect)
  (let* ((idle-kb-per-s
          (let ((watch (org-agent-bench--stalls-start))
                (c0 (org-agent-bench--consed)))
            (org-agent-bench--wait-for #'ignore 2.0 org-agent-bench--idle-tick)
            (org-agent-bench--stalls-stop watch)
            (/ (- (org-agent-bench--consed) c0) 2000.0)))
         (_ (garbage-collect))
         (watch (org-agent-bench--stalls-start))
         (consed (org-agent-bench--consed))
         (t0 (float-time))
         (m nil))
    (unwind-protect
        (progn (funcall thunk)
               (org-agent-bench--wait-for done 120 org-agent-bench--idle-tick))
      (setq m (org-agent-bench--stalls-stop watch)))
    (dolist (st (seq-take (sort (nth 3 m) (lambda (a b) (> (car a) (car b)))) 3))
      (org-agent-bench--out "    stall %s ms at %.2f s"
                            (org-agent-bench--fmt (* 1000 (nth 0 st))) (- (nth 1 st) t0)))
    (let* ((secs (- (float-time) t0))
           (kb (/ (- (org-agent-bench--consed) consed) 1000.0))
           (own (max 0 (- kb (* idle-kb-per-s secs)))))
      (org-agent-bench--out "    the stream's own Lisp data, less the watcher's (%s KB/s idle): %s KB: a collection falls in about %s%% of such streams (GC every %s KB)"
                            (org-agent-bench--fmt idle-kb-per-s) (org-agent-bench--fmt own)
                            (org-agent-bench--fmt (org-agent-bench--collection-odds (* 1000 own)))
                            (/ gc-cons-threshold 1000))
      (list (nth 0 m) secs (nth 2 m) (nth 1 m) (nth 4 m) kb))))

(defun org-agent-bench-here ()
  "Section 15: 2,000 tokens at 100 tokens/s into an Org note and into a rewrite."
  (require 'org-agent-test-server
           (expand-file-name "tests/elisp/org-agent-test-server.el" org-agent-bench-root))
  (require 'org-agent-here)
  (org-agent-bench--out "\n== 15. Streaming where you are: 2,000 tokens at 100 tokens/s")
  (let* ((binary (or (getenv "ORG_AGENT_BENCH_LLM_SERVER")
                     (org-agent-test-server-binary org-agent-bench-root t)))
         (port (org-agent-test-server-start binary))
         (org-agent-backends `((:name "bench" :url ,(format "http://127.0.0.1:%d/v1" port)
                                :model "bench" :key "sk-bench" :idle-timeout 10)))
         (buffer (generate-new-buffer "bench-here")))
    (unwind-protect
        (with-current-buffer buffer
          (org-mode)
          (buffer-enable-undo)
          (insert "* Project\nSome text.\n** Child\nBody.\n")
          (goto-char (point-min))
          ;; A warm-up: the connection, the code paths.
          (org-agent-test-server-push :text "ok")
          (let ((job (org-agent-here-ask "Warm up?" 'child)))
            (org-agent-bench--wait-for
             (lambda () (not (org-agent-bench--here-running-p job))) 30))
          (goto-char (point-min))
          (org-agent-test-server-push :tokens 2000 :text "word " :drip_ms 10)
          (let* ((job nil)
                 (m (org-agent-bench--stalls-while
                     (lambda () (setq job (org-agent-here-ask "A long answer?" 'child)))
                     (lambda () (not (org-agent-bench--here-running-p job))))))
            (org-agent-bench--out "  answer in place (child heading): %d words in %.1f s, %d ticks, worst stall %s ms, %s ms less garbage collections (%d GCs, %s KB allocated)"
                                  (how-many "word" (point-min) (point-max)) (nth 1 m) (nth 2 m)
                                  (org-agent-bench--fmt (nth 0 m)) (org-agent-bench--fmt (nth 3 m))
                                  (nth 4 m) (org-agent-bench--fmt (nth 5 m)))
            (org-agent-bench--row "15 worst main-thread stall, answer in place" (nth 0 m)
                                  "ms" "<= 16" (org-agent-bench--verdict (nth 0 m) #'<= 16))
            (org-agent-bench--row "15 worst stall outside GCs, answer in place" (nth 3 m)
                                  "ms" "<= 16" (org-agent-bench--verdict (nth 3 m) #'<= 16)))
          (erase-buffer)
          (insert "Some prose to rewrite.\n")
          (org-agent-test-server-push :tokens 2000 :text "word " :drip_ms 10)
          (let* ((job nil)
                 (m (org-agent-bench--stalls-while
                     (lambda ()
                       (setq job (org-agent-here-rewrite (point-min) (point-max) "Longer.")))
                     (lambda () (not (org-agent-bench--here-running-p job))))))
            (org-agent-bench--out "  rewrite proposal: %.1f s, %d ticks, worst stall %s ms, %s ms less garbage collections (diff included; %d GCs, %s KB allocated)"
                                  (nth 1 m) (nth 2 m) (org-agent-bench--fmt (nth 0 m))
                                  (org-agent-bench--fmt (nth 3 m)) (nth 4 m)
                                  (org-agent-bench--fmt (nth 5 m)))
            (org-agent-bench--row "15 worst main-thread stall, rewrite" (nth 0 m)
                                  "ms" "<= 16" (org-agent-bench--verdict (nth 0 m) #'<= 16))
            (org-agent-bench--row "15 worst stall outside GCs, rewrite" (nth 3 m)
                                  "ms" "<= 16" (org-agent-bench--verdict (nth 3 m) #'<= 16))))
      (with-current-buffer buffer (set-buffer-modified-p nil))
      (kill-buffer buffer)
      (org-agent-test-server-stop))))

(defun org-agent-bench-run ()
  "Run the whole benchmark and print the report."
  (let ((start (current-time))
        (only-chat (equal (getenv "ORG_AGENT_BENCH_ONLY") "chat"))
        (only-skills (equal (getenv "ORG_AGENT_BENCH_ONLY") "skills"))
        (only-store (equal (getenv "ORG_AGENT_BENCH_ONLY") "store"))
        (only-save (equal (getenv "ORG_AGENT_BENCH_ONLY") "save")))
    (org-agent-bench--setup)
    (when (equal (getenv "ORG_AGENT_BENCH_ONLY") "hostile")
      (unwind-protect
          (progn (org-agent-bench--header)
                 (org-agent-bench-hostile))
        (org-agent-bench--cleanup))
      (kill-emacs 0))
    (when (equal (getenv "ORG_AGENT_BENCH_ONLY") "here")
      (unwind-protect
          (progn (org-agent-bench--header)
                 (org-agent-bench-here)
                 (org-agent-bench--summary))
        (org-agent-bench--cleanup))
      (kill-emacs 0))
    (when (equal (getenv "ORG_AGENT_BENCH_ONLY") "approvals")
      (unwind-protect
          (progn (org-agent-bench--header)
                 (org-agent-bench-approvals)
                 (org-agent-bench--summary))
        (ignore-errors (org-agent-flush))
        (ignore-errors (org-agent--store-close))
        (org-agent-bench--cleanup))
      (kill-emacs 0))
    (unwind-protect
        (progn
          (org-agent-bench--header)
          (unless (or only-chat only-skills only-save) (org-agent-bench-ingest-corpus))
          (org-agent-bench--progress "generating the memex (%d x %d headlines)..."
                                     org-agent-bench-files org-agent-bench-per-file)
          (let* ((files nil)
                 (gen-secs (org-agent-bench--time
                             (setq files (org-agent-bench--generate-memex
                                          (expand-file-name "memex/" org-agent-bench--tmp)
                                          org-agent-bench-files org-agent-bench-per-file))))
                 (memex (progn
                          (org-agent-bench--progress "memex generated in %.1f s" gen-secs)
                          (if (or only-chat only-skills only-save)
                              (org-agent-bench--dir-ingest
                               (expand-file-name "memex/" org-agent-bench--tmp) "state-chat")
                            (org-agent-bench-ingest-memex files))))
                 (dir (plist-get memex :dir))
                 (headlines (plist-get memex :headlines)))
            (when only-save (org-agent-bench-save files))
            (unless (or only-chat only-skills only-save)
              (org-agent-bench-queries files headlines)
              (org-agent-bench-store-open dir (plist-get (org-agent-store-stats) :nodes))
              (org-agent-bench-memory dir headlines)
              (unless only-store
                (org-agent-bench-save files)
                (org-agent-bench-hostile)))
            (unless (or only-skills only-store only-save)
              (org-agent-bench-chat (plist-get (org-agent-store-stats) :headlines))
              (org-agent-bench-here))
            (unless (or only-chat only-store only-save)
              (org-agent-bench-skills (plist-get (org-agent-store-stats) :headlines)))
            (unless (or only-chat only-skills only-store only-save)
              (org-agent-bench-approvals)))
          (org-agent-bench--summary)
          (org-agent-bench--out "\n  total run time %.0f s" (float-time (time-since start))))
      (ignore-errors (org-agent-flush))
      (ignore-errors (org-agent--store-close))
      (org-agent-bench--cleanup))))

(provide 'org-agent-bench)
;;; org-agent-bench.el ends here
