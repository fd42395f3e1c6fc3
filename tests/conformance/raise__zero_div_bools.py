True // False
