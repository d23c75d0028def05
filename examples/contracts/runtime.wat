  ;; Shared runtime of the example contracts (ABI v1, docs/contracts.md). The build inserts this
  ;; text where a contract says ";; @runtime". Memory 0..1023 holds constant strings; the heap
  ;; grows from 1024 by bumping.
  (global $heap (mut i32) (i32.const 1024))
  (global $pos (mut i32) (i32.const 0))

  ;; alloc(n) -> pointer to n writable bytes; grows memory when needed (the host caps it)
  (func $alloc (export "alloc") (param $n i32) (result i32)
    (local $p i32) (local $end i32)
    (local.set $p (global.get $heap))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq
              (memory.grow (i32.add (i32.shr_u (i32.sub (local.get $end) (i32.mul (memory.size) (i32.const 65536))) (i32.const 16)) (i32.const 1)))
              (i32.const -1))
          (then unreachable))))
    (global.set $heap (local.get $end))
    (local.get $p))

  ;; index of needle in haystack, or -1
  (func $find (param $hp i32) (param $hl i32) (param $np i32) (param $nl i32) (result i32)
    (local $i i32) (local $j i32)
    (block $none
      (loop $outer
        (br_if $none (i32.gt_s (i32.add (local.get $i) (local.get $nl)) (local.get $hl)))
        (local.set $j (i32.const 0))
        (block $mismatch
          (loop $inner
            (if (i32.eq (local.get $j) (local.get $nl)) (then (return (local.get $i))))
            (br_if $mismatch (i32.ne
              (i32.load8_u (i32.add (i32.add (local.get $hp) (local.get $i)) (local.get $j)))
              (i32.load8_u (i32.add (local.get $np) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $inner)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (i32.const -1))

  ;; parses an optionally negative decimal at p (after spaces and one ':'), up to end; the value,
  ;; with $pos set after the digits, or $pos = -1 when no digits are there
  (func $parse_int (param $p i32) (param $end i32) (result i64)
    (local $c i32) (local $v i64) (local $neg i32) (local $digits i32)
    (block $done
      (loop $skip
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 32)) (i32.eq (local.get $c) (i32.const 58)))
          (then (local.set $p (i32.add (local.get $p) (i32.const 1))) (br $skip)))))
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end)) (i32.eq (i32.load8_u (local.get $p)) (i32.const 45)))
      (then (local.set $neg (i32.const 1)) (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (block $stop
      (loop $digit
        (br_if $stop (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 48)))
        (br_if $stop (i32.gt_u (local.get $c) (i32.const 9)))
        (br_if $stop (i32.ge_u (local.get $digits) (i32.const 15)))
        (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (i64.extend_i32_u (local.get $c))))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $digit)))
    (if (i32.eqz (local.get $digits))
      (then (global.set $pos (i32.const -1)) (return (i64.const 0))))
    (global.set $pos (local.get $p))
    (if (result i64) (local.get $neg) (then (i64.sub (i64.const 0) (local.get $v))) (else (local.get $v))))

  ;; writes v in decimal at p; the number of bytes written
  (func $write_int (param $v i64) (param $p i32) (result i32)
    (local $n i32) (local $i i32) (local $j i32) (local $t i32) (local $start i32)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then (i32.store8 (local.get $p) (i32.const 45)) (local.set $n (i32.const 1)) (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $start (local.get $n))
    (loop $digits
      (i32.store8 (i32.add (local.get $p) (local.get $n)) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    ;; reverse the digits
    (local.set $i (i32.add (local.get $p) (local.get $start)))
    (local.set $j (i32.sub (i32.add (local.get $p) (local.get $n)) (i32.const 1)))
    (block $rev_done
      (loop $rev
        (br_if $rev_done (i32.ge_u (local.get $i) (local.get $j)))
        (local.set $t (i32.load8_u (local.get $i)))
        (i32.store8 (local.get $i) (i32.load8_u (local.get $j)))
        (i32.store8 (local.get $j) (local.get $t))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $j (i32.sub (local.get $j) (i32.const 1)))
        (br $rev)))
    (local.get $n))

  ;; copies n bytes from src to dst; dst + n
  (func $copy (param $dst i32) (param $src i32) (param $n i32) (result i32)
    (memory.copy (local.get $dst) (local.get $src) (local.get $n))
    (i32.add (local.get $dst) (local.get $n)))

  ;; the 20-byte result record: status, state pointer and length, output pointer and length
  (func $result (param $status i32) (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (local $r i32)
    (local.set $r (call $alloc (i32.const 20)))
    (i32.store (local.get $r) (local.get $status))
    (i32.store offset=4 (local.get $r) (local.get $sp))
    (i32.store offset=8 (local.get $r) (local.get $sl))
    (i32.store offset=12 (local.get $r) (local.get $op))
    (i32.store offset=16 (local.get $r) (local.get $ol))
    (local.get $r))
