;;; emacs_driver.el --- plays the user in tests/editors/test_emacs_client.py -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded after the README's init snippet in `emacs --batch'.  Opens the model file the way
;; C-x C-f does (the command loop's `post-command-hook' is run after the command, as Emacs does
;; between commands), waits for flymake diagnostics, and writes what it saw as JSON.
;;
;; Environment: FXSCOPE_TEST_FILE (file to open), FXSCOPE_TEST_OUT (result path),
;; FXSCOPE_TEST_TIMEOUT (seconds per wait), FXSCOPE_TEST_BACKENDS (flymake backends to wait
;; for, comma-separated; default: any diagnostic), FXSCOPE_TEST_WAIT_FOR (diagnostics each of
;; those backends must show, "CODE:LINE,..." with 1-based lines: a server publishes a file's
;; findings as each of its targets finishes, so the first report may hold only some of them).

;;; Code:

(require 'json)
(require 'flymake)
(require 'seq)

(defvar fxscope-test--result nil "Alist written to FXSCOPE_TEST_OUT.")

(defun fxscope-test--put (key value)
  "Record VALUE under KEY in the result."
  (setq fxscope-test--result (cons (cons key value) fxscope-test--result)))

(defun fxscope-test--command-loop-tick ()
  "What Emacs does between two commands: run `post-command-hook', read process output."
  (run-hooks 'post-command-hook)
  (accept-process-output nil 0.1))

(defun fxscope-test--wait (pred seconds)
  "Run the command loop until PRED returns non-nil or SECONDS pass; PRED's value."
  (let ((deadline (+ (float-time) seconds))
        (value nil))
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (fxscope-test--command-loop-tick))
    value))

(defun fxscope-test--diagnostic (diag)
  "DIAG as a JSON-ready alist with 1-based lines and 0-based columns."
  (let ((beg (flymake-diagnostic-beg diag))
        (end (flymake-diagnostic-end diag)))
    `((line . ,(line-number-at-pos beg))
      (column . ,(save-excursion (goto-char beg) (current-column)))
      (end_line . ,(line-number-at-pos end))
      (end_column . ,(save-excursion (goto-char end) (current-column)))
      (type . ,(symbol-name (flymake-diagnostic-type diag)))
      (backend . ,(format "%s" (flymake-diagnostic-backend diag)))
      (text . ,(flymake-diagnostic-text diag)))))

(defun fxscope-test--shows (diags backend &optional code line)
  "Non-nil when DIAGS hold one from BACKEND (any when nil), with CODE on LINE when given."
  (seq-some (lambda (d)
              (and (or (null backend)
                       (equal (format "%s" (flymake-diagnostic-backend d)) backend))
                   (or (null line)
                       (= (line-number-at-pos (flymake-diagnostic-beg d)) line))
                   (or (null code)
                       (string-match-p (regexp-quote code) (flymake-diagnostic-text d)))))
            diags))

(defun fxscope-test--expected-diagnostics ()
  "The buffer's diagnostics once every backend in FXSCOPE_TEST_BACKENDS (or any backend)
shows every diagnostic in FXSCOPE_TEST_WAIT_FOR (or any diagnostic)."
  (let ((diags (flymake-diagnostics))
        (wanted (or (split-string (or (getenv "FXSCOPE_TEST_BACKENDS") "") "," t) '(nil)))
        (expected (mapcar (lambda (item)
                            (let ((parts (split-string item ":")))
                              (list (car parts) (string-to-number (cadr parts)))))
                          (split-string (or (getenv "FXSCOPE_TEST_WAIT_FOR") "") "," t))))
    (and diags
         (seq-every-p (lambda (backend)
                        (and (fxscope-test--shows diags backend)
                             (seq-every-p (lambda (want)
                                            (fxscope-test--shows diags backend
                                                                 (car want) (cadr want)))
                                          expected)))
                      wanted)
         diags)))

(defun fxscope-test--run ()
  "Open the file, wait for diagnostics, record them; the exit code."
  (let ((timeout (string-to-number (or (getenv "FXSCOPE_TEST_TIMEOUT") "120"))))
    (find-file (getenv "FXSCOPE_TEST_FILE"))
    (fxscope-test--put 'major_mode (symbol-name major-mode))
    (fxscope-test--command-loop-tick)
    (when (fboundp 'eglot-current-server)
      (let ((server (fxscope-test--wait #'eglot-current-server 30)))
        (fxscope-test--put 'eglot_server (and server (jsonrpc-name server)))
        (fxscope-test--put 'eglot_command
                           (and server (process-command (jsonrpc--process server))))))
    (fxscope-test--put 'flymake_backends
                       (mapcar (lambda (f) (format "%s" f)) flymake-diagnostic-functions))
    (let ((diags (fxscope-test--wait #'fxscope-test--expected-diagnostics timeout)))
      (fxscope-test--put 'running_backends
                         (mapcar (lambda (f) (format "%s" f)) (flymake-running-backends)))
      (fxscope-test--put 'disabled_backends
                         (mapcar (lambda (f) (format "%s" f)) (flymake-disabled-backends)))
      (fxscope-test--put 'diagnostics (vconcat (mapcar #'fxscope-test--diagnostic diags)))
      (unless diags
        (let ((log (get-buffer "*Flymake log*")))
          (when log
            (fxscope-test--put 'flymake_log (with-current-buffer log
                                              (buffer-string))))))
      (if diags 0 1))))

(let ((code (condition-case err
                (fxscope-test--run)
              (error (fxscope-test--put 'error (error-message-string err)) 1))))
  (with-temp-file (getenv "FXSCOPE_TEST_OUT")
    (insert (json-encode fxscope-test--result)))
  (when (and (fboundp 'eglot-current-server) (eglot-current-server))
    (ignore-errors (eglot-shutdown (eglot-current-server))))
  (kill-emacs code))

;;; emacs_driver.el ends here
