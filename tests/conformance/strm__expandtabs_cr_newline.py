['ab\tc\rd\te'.expandtabs(4), 'a\n\tb'.expandtabs(3), '\t\t'.expandtabs(2), 'é\tx'.expandtabs(4)]
