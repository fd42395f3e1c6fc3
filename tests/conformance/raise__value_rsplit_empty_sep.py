'a b'.rsplit('')
