# s -= t changes the set itself (set_isub): every name for it sees the change.
pending = {101, 102, 103, 104}
queue = {"todo": pending}
done = {102, 104}
pending -= done
queue["todo"] -= {101}
print(pending, queue)
alias = pending
pending -= pending
[pending, alias, alias is pending, queue]
