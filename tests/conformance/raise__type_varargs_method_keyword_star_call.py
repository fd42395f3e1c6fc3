# Through **kwargs, a METH_VARARGS method refuses keywords with its bare name.
seen = {1, 2}
seen.union(**{'other': [3]})
