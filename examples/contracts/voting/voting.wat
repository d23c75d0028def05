;; Voting contract (ABI v1, docs/contracts.md). State: {"yes":<a>,"no":<b>} ({"yes":0,"no":0}
;; after deploy). Input: {"vote":"yes"} or {"vote":"no"}; that tally grows by one. Output: the new
;; state.
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\22vote\22")     ;; 6 bytes at 0
  (data (i32.const 8) "\22yes\22")      ;; 5 bytes at 8
  (data (i32.const 16) "\22no\22")      ;; 4 bytes at 16
  (data (i32.const 24) "{\22yes\22:")   ;; 7 bytes at 24
  (data (i32.const 32) ",\22no\22:")    ;; 6 bytes at 32
  (data (i32.const 40) "state is not a tally") ;; 20 bytes at 40
  (data (i32.const 64) "expected {\22vote\22: \22yes\22} or {\22vote\22: \22no\22}") ;; 42 bytes at 64
  ;; @runtime

  ;; the number after `key` in [p, p+len), or -1 with $pos = -1
  (func $tally (param $p i32) (param $len i32) (param $key i32) (param $kl i32) (result i64)
    (local $at i32)
    (local.set $at (call $find (local.get $p) (local.get $len) (local.get $key) (local.get $kl)))
    (if (i32.lt_s (local.get $at) (i32.const 0)) (then (global.set $pos (i32.const -1)) (return (i64.const -1))))
    (call $parse_int (i32.add (i32.add (local.get $p) (local.get $at)) (local.get $kl)) (i32.add (local.get $p) (local.get $len))))

  (func (export "execute") (param $sp i32) (param $sl i32) (param $ip i32) (param $il i32) (result i32)
    (local $yes i64) (local $no i64) (local $at i32) (local $rest i32) (local $buf i32) (local $o i32)
    (if (i32.gt_u (local.get $sl) (i32.const 0))
      (then
        (local.set $yes (call $tally (local.get $sp) (local.get $sl) (i32.const 8) (i32.const 5)))
        (if (i32.lt_s (global.get $pos) (i32.const 0))
          (then (return (call $result (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 40) (i32.const 20)))))
        (local.set $no (call $tally (local.get $sp) (local.get $sl) (i32.const 16) (i32.const 4)))
        (if (i32.lt_s (global.get $pos) (i32.const 0))
          (then (return (call $result (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 40) (i32.const 20)))))))
    (if (i32.gt_u (local.get $il) (i32.const 0))
      (then
        (local.set $at (call $find (local.get $ip) (local.get $il) (i32.const 0) (i32.const 6)))
        (if (i32.lt_s (local.get $at) (i32.const 0))
          (then (return (call $result (i32.const 2) (i32.const 0) (i32.const 0) (i32.const 64) (i32.const 42)))))
        (local.set $at (i32.add (local.get $at) (i32.const 6)))
        (local.set $rest (i32.sub (local.get $il) (local.get $at)))
        (if (i32.ge_s (call $find (i32.add (local.get $ip) (local.get $at)) (local.get $rest) (i32.const 8) (i32.const 5)) (i32.const 0))
          (then (local.set $yes (i64.add (local.get $yes) (i64.const 1))))
          (else
            (if (i32.ge_s (call $find (i32.add (local.get $ip) (local.get $at)) (local.get $rest) (i32.const 16) (i32.const 4)) (i32.const 0))
              (then (local.set $no (i64.add (local.get $no) (i64.const 1))))
              (else (return (call $result (i32.const 2) (i32.const 0) (i32.const 0) (i32.const 64) (i32.const 42)))))))))
    ;; {"yes":<yes>,"no":<no>}
    (local.set $buf (call $alloc (i32.const 64)))
    (local.set $o (call $copy (local.get $buf) (i32.const 24) (i32.const 7)))
    (local.set $o (i32.add (local.get $o) (call $write_int (local.get $yes) (local.get $o))))
    (local.set $o (call $copy (local.get $o) (i32.const 32) (i32.const 6)))
    (local.set $o (i32.add (local.get $o) (call $write_int (local.get $no) (local.get $o))))
    (i32.store8 (local.get $o) (i32.const 125))
    (local.set $o (i32.add (local.get $o) (i32.const 1)))
    (call $result (i32.const 0) (local.get $buf) (i32.sub (local.get $o) (local.get $buf)) (local.get $buf) (i32.sub (local.get $o) (local.get $buf))))
)
