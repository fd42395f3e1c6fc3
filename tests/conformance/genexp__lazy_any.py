calls = []
gen_result = any(calls.append(i) or i == 2 for i in range(100))
[gen_result, len(calls)]
