['x'.isalpha(), '123abc'.isalnum(), 'ABC def'.isupper(), 'abc DEF'.islower(), 'Ⅷ'.isnumeric(), 'Ⅷ'.isdigit(), '𝟘'.isdecimal(), 'ǅ'.isupper()]
